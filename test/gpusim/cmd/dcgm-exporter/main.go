// Command dcgm-exporter is the lab's GPU SIMULATOR stand-in for NVIDIA's
// dcgm-exporter. Test tooling only, never shipped. It serves, as the real
// one does on $DCGM_EXPORTER_LISTEN (default :9400), /metrics and /health:
// the metrics are a real exporter's scrape ($GPUSIM_DCGM_CAPTURE, default
// /etc/gpusim/dcgm.prom, one of test/testdata/dcgm) replayed with the
// node's GPUs in place of the recorded ones - $GPUSIM_UUIDS names them in
// order, "NODE:UUID,UUID NODE:UUID" per node ($NODE_NAME, the chart's) or
// "UUID,UUID" for every node, and the recorded GPUs past their count are
// left out - and $NODE_NAME as Hostname. A lab node
// then shows what a real GPU node's exporter shows, for its own GPUs.
// Its arguments (the chart's -f counters file, ...) are accepted and
// ignored.
package main

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	capture := envOr("GPUSIM_DCGM_CAPTURE", "/etc/gpusim/dcgm.prom")
	b, err := os.ReadFile(capture)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpukit GPU SIMULATOR dcgm-exporter:", err)
		os.Exit(1)
	}
	node := os.Getenv("NODE_NAME")
	body := Replay(string(b), UUIDsOf(os.Getenv("GPUSIM_UUIDS"), node), node)
	http.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, body)
	})
	http.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK (gpukit GPU SIMULATOR)") })
	addr := envOr("DCGM_EXPORTER_LISTEN", ":9400")
	fmt.Fprintf(os.Stderr, "gpukit GPU SIMULATOR dcgm-exporter: replaying %s on %s\n", capture, addr)
	if err := http.ListenAndServe(addr, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// UUIDsOf are node's GPUs in spec ("NODE:UUID,UUID NODE:UUID", or
// "UUID,UUID" for every node); nil: none named.
func UUIDsOf(spec, node string) []string {
	for _, entry := range strings.Fields(spec) {
		n, list, perNode := strings.Cut(entry, ":")
		if !perNode {
			return strings.Split(entry, ",")
		}
		if n == node {
			return strings.Split(list, ",")
		}
	}
	return nil
}

var (
	gpuLabel      = regexp.MustCompile(`[{,]gpu="(\d+)"`)
	uuidLabel     = regexp.MustCompile(`UUID="[^"]*"`)
	hostnameLabel = regexp.MustCompile(`Hostname="[^"]*"`)
)

// Replay is the scrape with GPU i's UUID uuids[i] (GPUs past them left
// out; none given: all kept as recorded) and Hostname host (if given).
func Replay(scrape string, uuids []string, host string) string {
	var out strings.Builder
	for _, line := range strings.SplitAfter(scrape, "\n") {
		if m := gpuLabel.FindStringSubmatch(line); m != nil && len(uuids) > 0 {
			i, _ := strconv.Atoi(m[1])
			if i >= len(uuids) {
				continue
			}
			line = uuidLabel.ReplaceAllString(line, `UUID="`+uuids[i]+`"`)
		}
		if host != "" {
			line = hostnameLabel.ReplaceAllString(line, `Hostname="`+host+`"`)
		}
		out.WriteString(line)
	}
	return out.String()
}
