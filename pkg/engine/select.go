package engine

import (
	"fmt"
	"strings"
)

// UnknownPhaseError is a phase name given to select phases that matches
// none. The engine does not know where the name came from: the caller (the
// CLI, with its flag names) says that.
type UnknownPhaseError struct {
	Name string
	// Skip is true when the name was among the phases to skip, false when
	// among the only ones to run.
	Skip bool
	// Valid are the names that would have matched (PhaseNames).
	Valid []string
}

func (e *UnknownPhaseError) Error() string {
	return fmt.Sprintf("unknown phase %q; valid phases: %s", e.Name, strings.Join(e.Valid, ", "))
}

// Is makes errors.Is(err, ErrUnknownPhase) hold.
func (e *UnknownPhaseError) Is(target error) bool { return target == ErrUnknownPhase }

// SelectPhases returns the phases left by only (run just these) and skip,
// in their original order. A name matches a phase with that exact name or
// any phase below it ("nvidia" matches "nvidia/driver"). only empty means
// all phases. A name that matches nothing is an *UnknownPhaseError.
func SelectPhases(phases []Phase, only, skip []string) ([]Phase, error) {
	if err := checkPhases(phases); err != nil {
		return nil, err
	}
	for _, list := range []struct {
		skip  bool
		names []string
	}{{false, only}, {true, skip}} {
		for _, n := range list.names {
			if !matchesAny(phases, n) {
				return nil, &UnknownPhaseError{Name: n, Skip: list.skip, Valid: PhaseNames(phases)}
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
