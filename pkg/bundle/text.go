package bundle

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes l for a reader: a count per kind, then the artifacts
// of each kind (packages by OS family and source), then what cannot be
// named exactly and why.
func WriteText(w io.Writer, l *List) error {
	var counts []string
	for _, k := range kinds {
		if n := len(l.known(k)); n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", plural(k), n))
		}
	}
	unknown := l.Unknown()
	fmt.Fprintf(w, "cluster %s needs %s; %d unknown\n", l.Cluster, strings.Join(counts, ", "), len(unknown))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range kinds {
		as := l.known(k)
		if len(as) == 0 {
			continue
		}
		fmt.Fprintf(tw, "\n%s\n", plural(k))
		group := ""
		for _, a := range as {
			if k != Package {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", nameText(a), a.Source, forText(a))
				continue
			}
			if g := a.Family + " " + sourceText(a.Source); g != group {
				group = g
				fmt.Fprintf(tw, "  %s\n", g)
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", a.Name, cmp.Or(a.Version, "newest"), forText(a))
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(tw, "\nunknown\n")
		for _, a := range unknown {
			fmt.Fprintf(tw, "  %s: %s\n", a.Name, a.Unknown)
		}
	}
	return tw.Flush()
}

func plural(k Kind) string {
	switch k {
	case Manifests:
		return "kubeflow manifests"
	case RemoteBase:
		return "remote bases"
	}
	return string(k) + "s"
}

func sourceText(s string) string {
	switch {
	case s == "":
		return "(the distribution's sources)"
	case strings.HasPrefix(s, "components "):
		return "(the distribution's sources, " + s + ")"
	}
	return s
}

func nameText(a Artifact) string {
	if a.Version != "" {
		return a.Name + " " + a.Version
	}
	return a.Name
}

func forText(a Artifact) string {
	s := strings.Join(a.For, "; ")
	if len(a.Hosts) > 0 {
		s += " (" + strings.Join(a.Hosts, ", ") + ")"
	}
	return s
}
