package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// TextOptions change how a report is written.
type TextOptions struct {
	// Color styles statuses for a terminal.
	Color bool
	// Verbose lists passed checks too.
	Verbose bool
}

// WriteText writes the report as a host table followed by the findings,
// each finding once with the hosts it concerns, so that 1000 hosts with the
// same warning take one line, not 1000.
func WriteText(w io.Writer, rep Report, o TextOptions) error {
	paint := func(s Status) string { return string(s) }
	if o.Color {
		// The caller decided on colour (a terminal, no NO_COLOR): render it
		// whatever lipgloss would guess from the process's stdout. The three
		// basic colours look the same in every profile that has colour.
		r := lipgloss.NewRenderer(w)
		r.SetColorProfile(termenv.ANSI)
		styles := map[Status]lipgloss.Style{
			Pass: r.NewStyle().Foreground(lipgloss.Color("2")),
			Warn: r.NewStyle().Foreground(lipgloss.Color("3")),
			Fail: r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		}
		paint = func(s Status) string { return styles[s].Render(string(s)) }
	}
	// The table is laid out uncoloured, then the status cells are painted
	// in place: tabwriter would count the colour escapes as width.
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tADDRESS\tSTATUS\tOS\tKERNEL\tCPU\tMEMORY\tGPUS")
	rows, hidden := tableRows(rep, o.Verbose)
	for _, h := range rows {
		osName, kernel, cpus, mem, gpus := "-", "-", "-", "-", "-"
		if f := h.Facts; f != nil {
			osName, kernel = describeOS(f), f.Kernel
			cpus, mem = fmt.Sprint(f.CPUs), fmt.Sprintf("%.0f GiB", float64(f.MemKiB)/(1<<20))
			gpus = describeGPUs(h)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Host, h.Address, h.Status, osName, kernel, cpus, mem, gpus)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(table.String(), "\n")
	col := strings.Index(lines[0], "STATUS")
	for i, line := range lines {
		if i > 0 && len(line) > col+4 {
			st := Status(strings.Fields(line[col:])[0])
			line = line[:col] + paint(st) + line[col+len(st):]
		}
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
	}
	if hidden > 0 {
		fmt.Fprintf(w, "(%d more hosts not shown; --verbose lists every host)\n", hidden)
	}
	findings := group(rep, o.Verbose)
	if len(findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range findings {
		fmt.Fprintf(w, "%s %-20s %s\n    %s\n", paint(f.status), f.check, hostList(f.hosts, 8), f.reason)
	}
	pass, warn, fail := rep.Counts()
	_, err := fmt.Fprintf(w, "\n%d host(s): %d ready, %d with warnings, %d failed\n", len(rep.Hosts), pass, warn, fail)
	return err
}

// maxRows keeps the host table of a 1000-host run readable; the findings
// below it still cover every host.
const maxRows = 50

// tableRows picks the rows to print: every host when verbose or few, else
// the failed hosts first, then others up to maxRows.
func tableRows(rep Report, verbose bool) ([]HostReport, int) {
	if verbose || len(rep.Hosts) <= maxRows {
		return rep.Hosts, 0
	}
	rows := make([]HostReport, 0, maxRows)
	for _, h := range rep.Hosts {
		if h.Status == Fail && len(rows) < maxRows {
			rows = append(rows, h)
		}
	}
	for _, h := range rep.Hosts {
		if h.Status != Fail && len(rows) < maxRows {
			rows = append(rows, h)
		}
	}
	return rows, len(rep.Hosts) - len(rows)
}

func describeGPUs(h HostReport) string {
	f := h.Facts
	switch {
	case len(f.GPUs) > 0:
		return fmt.Sprintf("%d× %s, driver %s", len(f.GPUs), f.GPUs[0].Name, f.GPUs[0].Driver)
	case len(f.PCIGPUs) > 0:
		return fmt.Sprintf("%d on PCI, no driver", len(f.PCIGPUs))
	case f.NvidiaSMIError != "":
		return "nvidia-smi fails"
	default:
		return "none"
	}
}

type finding struct {
	status        Status
	check, reason string
	hosts         []string
}

// group merges identical findings across hosts; failures first, then
// warnings, then the checks most hosts share.
func group(rep Report, verbose bool) []*finding {
	byKey := map[string]*finding{}
	var out []*finding
	add := func(s Status, check, reason, host string) {
		key := string(s) + "\x00" + check + "\x00" + reason
		f := byKey[key]
		if f == nil {
			f = &finding{status: s, check: check, reason: reason}
			byKey[key] = f
			out = append(out, f)
		}
		f.hosts = append(f.hosts, host)
	}
	for _, h := range rep.Hosts {
		if h.Error != "" {
			add(Fail, "reach", h.Error, h.Host)
		}
		for _, c := range h.Checks {
			if c.Status != Pass || verbose {
				add(c.Status, c.Check, c.Reason, h.Host)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if rank(out[i].status) != rank(out[j].status) {
			return rank(out[i].status) > rank(out[j].status)
		}
		return len(out[i].hosts) > len(out[j].hosts)
	})
	return out
}

func hostList(hosts []string, max int) string {
	if len(hosts) <= max {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s, ... %s (%d hosts)", strings.Join(hosts[:max-1], ", "), hosts[len(hosts)-1], len(hosts))
}

// WriteJSON writes the report as one JSON object.
func WriteJSON(w io.Writer, rep Report) error {
	return json.NewEncoder(w).Encode(struct {
		Type string `json:"type"`
		Report
	}{"preflight-report", rep})
}
