package acceptance

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Rank is one process of an nccl-tests run: where it ran and on which GPU.
type Rank struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Device int    `json:"device"`
	GPU    string `json:"gpu"`
}

// NCCLRow is one message size's result.
type NCCLRow struct {
	Bytes int64 `json:"bytes"`
	// BusBW is the better of the out-of-place and in-place bus bandwidths
	// (GB/s); Wrong counts wrong results (-1 where the old format gave an
	// error value instead).
	BusBW float64 `json:"busBW"`
	Wrong int     `json:"wrong"`
}

// NCCL is an nccl-tests result.
type NCCL struct {
	Ranks []Rank    `json:"ranks,omitempty"`
	Rows  []NCCLRow `json:"rows"`
	// AvgBusBW is the run's "Avg bus bandwidth" (0: not printed).
	AvgBusBW float64 `json:"avgBusBW,omitempty"`
	// OutOfBounds is the "Out of bounds values" line's verdict ("0 OK").
	OutOfBounds string `json:"outOfBounds,omitempty"`
}

var (
	// Launchers prefix every line: srun -l ("13: "), OpenMPI's
	// --tag-output ("[1,0]<stdout>:").
	ncclPrefix = regexp.MustCompile(`^(\s*\d+:\s?|\[\d+,\d+\]<std(out|err)>:)`)
	ncclRank   = regexp.MustCompile(`^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.*)$`)
	ncclAvg    = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*([0-9.]+)`)
	ncclOOB    = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(.*)$`)
)

// ParseNCCL reads an nccl-tests log (all_reduce_perf and its siblings):
// the ranks, each size's bus bandwidth, the average. It takes the current
// columns (size count type redop root time algbw busbw #wrong, twice) and
// the older ones (no root; an error value for #wrong), with launcher
// prefixes and the noise of MPI and NCCL lines around them.
func ParseNCCL(out string) (NCCL, error) {
	var r NCCL
	var cols []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(ncclPrefix.ReplaceAllString(line, ""), " \r")
		t := strings.TrimSpace(line)
		if m := ncclRank.FindStringSubmatch(t); m != nil {
			rank, _ := strconv.Atoi(m[1])
			dev, _ := strconv.Atoi(m[3])
			r.Ranks = append(r.Ranks, Rank{Rank: rank, Host: m[2], Device: dev, GPU: strings.TrimSpace(m[4])})
			continue
		}
		if m := ncclAvg.FindStringSubmatch(t); m != nil {
			r.AvgBusBW, _ = strconv.ParseFloat(m[1], 64)
			continue
		}
		if m := ncclOOB.FindStringSubmatch(t); m != nil {
			r.OutOfBounds = strings.TrimSpace(m[1])
			continue
		}
		if strings.HasPrefix(t, "#") && strings.Contains(t, "size") && strings.Contains(t, "busbw") {
			cols = strings.Fields(strings.TrimPrefix(t, "#"))
			continue
		}
		if cols == nil || strings.HasPrefix(t, "#") || t == "" {
			continue
		}
		f := strings.Fields(t)
		if len(f) != len(cols) {
			continue
		}
		size, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue // an NCCL INFO line, a warning
		}
		row := NCCLRow{Bytes: size}
		for i, c := range cols {
			switch c {
			case "busbw":
				if v, err := strconv.ParseFloat(f[i], 64); err == nil && v > row.BusBW {
					row.BusBW = v
				}
			case "#wrong":
				if v, err := strconv.Atoi(f[i]); err == nil {
					row.Wrong += v
				}
			case "error":
				if v, err := strconv.ParseFloat(f[i], 64); err == nil && v > 1e-3 {
					row.Wrong = -1 // the old format's error: large means wrong
				}
			}
		}
		r.Rows = append(r.Rows, row)
	}
	if len(r.Rows) == 0 {
		return r, fmt.Errorf("nccl-tests: no result rows in %q", firstLine(out))
	}
	return r, nil
}

// PeakBusBW is the bus bandwidth of the largest message size: where a
// link's bandwidth shows (small sizes measure latency).
func (r NCCL) PeakBusBW() float64 {
	best := NCCLRow{}
	for _, row := range r.Rows {
		if row.Bytes >= best.Bytes {
			best = row
		}
	}
	return best.BusBW
}

// Hosts are the hosts the ranks ran on, in rank order.
func (r NCCL) Hosts() []string {
	var out []string
	for _, k := range r.Ranks {
		if !slices.Contains(out, k.Host) {
			out = append(out, k.Host)
		}
	}
	return out
}

// Verdict judges a run against minBusBW (GB/s at the largest size; 0: no
// threshold known, the bandwidth is reported only): failed on wrong
// results, out-of-bounds values or a bandwidth below it.
func (r NCCL) Verdict(minBusBW float64) (Status, string) {
	for _, row := range r.Rows {
		if row.Wrong != 0 {
			return Failed, fmt.Sprintf("wrong results at %d bytes", row.Bytes)
		}
	}
	if r.OutOfBounds != "" && !strings.HasSuffix(r.OutOfBounds, "OK") {
		return Failed, "out of bounds values: " + r.OutOfBounds
	}
	peak := r.PeakBusBW()
	if minBusBW > 0 && peak < minBusBW {
		return Failed, fmt.Sprintf("bus bandwidth %.1f GB/s at %s, below the %.0f GB/s expected", peak, size(r.Rows), minBusBW)
	}
	if minBusBW == 0 {
		return Passed, fmt.Sprintf("bus bandwidth %.1f GB/s at %s (no threshold for this GPU)", peak, size(r.Rows))
	}
	return Passed, fmt.Sprintf("bus bandwidth %.1f GB/s at %s (threshold %.0f)", peak, size(r.Rows), minBusBW)
}

func size(rows []NCCLRow) string {
	var b int64
	for _, r := range rows {
		b = max(b, r.Bytes)
	}
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%g GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%g MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d B", b)
}
