package engine

import (
	"fmt"
	"strings"
)

// SelectPhases returns the phases that run with the given --only and
// --skip-phases names, in their original order. A name matches a phase with
// that exact name or any phase below it ("nvidia" matches "nvidia/driver").
// only empty means all phases. A name that matches nothing is an error
// wrapping ErrUnknownPhase that lists the valid names.
func SelectPhases(phases []Phase, only, skip []string) ([]Phase, error) {
	if err := checkPhases(phases); err != nil {
		return nil, err
	}
	for _, list := range []struct {
		flag  string
		names []string
	}{{"--only", only}, {"--skip-phases", skip}} {
		for _, n := range list.names {
			if !matchesAny(phases, n) {
				return nil, fmt.Errorf("%w %q in %s; valid phases: %s",
					ErrUnknownPhase, n, list.flag, strings.Join(PhaseNames(phases), ", "))
			}
		}
	}
	var out []Phase
	for _, p := range phases {
		if len(only) > 0 && !matchesName(p.Name(), only) {
			continue
		}
		if matchesName(p.Name(), skip) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// PhaseNames lists the names SelectPhases accepts: every group prefix and
// every phase, in phase order ("preflight", "preflight/facts", ...).
func PhaseNames(phases []Phase) []string {
	seen := map[string]bool{}
	var names []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, p := range phases {
		parts := strings.Split(p.Name(), "/")
		for i := 1; i < len(parts); i++ {
			add(strings.Join(parts[:i], "/"))
		}
		add(p.Name())
	}
	return names
}

func matchesAny(phases []Phase, name string) bool {
	for _, p := range phases {
		if matchesName(p.Name(), []string{name}) {
			return true
		}
	}
	return false
}

func matchesName(phase string, names []string) bool {
	for _, n := range names {
		n = strings.TrimSuffix(n, "/")
		if phase == n || strings.HasPrefix(phase, n+"/") {
			return true
		}
	}
	return false
}

// checkPhases rejects lists the runner could not report unambiguously.
func checkPhases(phases []Phase) error {
	seen := map[string]bool{}
	for _, p := range phases {
		n := p.Name()
		switch {
		case n == "" || strings.HasPrefix(n, "/") || strings.HasSuffix(n, "/") || strings.Contains(n, "//"):
			return fmt.Errorf("engine: invalid phase name %q", n)
		case n == ConnectPhase:
			return fmt.Errorf("engine: phase name %q is reserved", n)
		case seen[n]:
			return fmt.Errorf("engine: duplicate phase %q", n)
		}
		seen[n] = true
	}
	return nil
}
