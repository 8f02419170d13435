package upgrade

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// A rollout is resumed or started anew from what its state file says.
// Decide is that decision, before any host is reached: every refusal is
// bad input (the caller says so with its exit code), and nothing is
// written.

// ResumeError is a refused start or resume; Field names the version the
// command line gave that the rollout being resumed does not install
// ("driver", "cuda", "toolkit"), "" for the other refusals.
type ResumeError struct {
	Field, Want, Have string
	msg               string
}

func (e *ResumeError) Error() string { return e.msg }

// Decide reads the rollout state at path and says what a run with want
// (the versions asked for; "" where none) and resume (--resume) does:
//   - no state, or a finished rollout and no resume: a new rollout (nil);
//   - an unfinished rollout and resume: that rollout, with want's empty
//     versions taken from it (a version given must be its own);
//   - anything else is refused with a *ResumeError saying what to do.
func Decide(path string, resume bool, want Target) (*State, Target, error) {
	st, err := LoadState(path)
	switch {
	case errors.Is(err, ErrNoState):
		if resume {
			return nil, want, &ResumeError{msg: fmt.Sprintf("no rollout to resume (%s does not exist)", path)}
		}
		return nil, want, nil
	case err != nil:
		return nil, want, fmt.Errorf("rollout state: %w", err)
	}
	// A rollout that never took a node out of service holds nothing back.
	unfinished := st.Finished == nil && len(st.Nodes) > 0
	if !resume {
		if unfinished {
			return nil, want, &ResumeError{msg: fmt.Sprintf("a rollout to %s started %s is unfinished (%s): --resume to go on, or remove %s to start over",
				st.Target, st.Started.Format(time.RFC3339), st.Describe(), path)}
		}
		return nil, want, nil // a finished rollout: a new one replaces it
	}
	if st.Finished != nil {
		return nil, want, &ResumeError{msg: fmt.Sprintf("the rollout to %s finished %s; nothing to resume", st.Target, st.Finished.Format(time.RFC3339))}
	}
	for _, c := range []struct {
		field string
		want  *string
		have  string
	}{{"driver", &want.Driver, st.Target.Driver}, {"cuda", &want.CUDA, st.Target.CUDA}, {"toolkit", &want.Toolkit, st.Target.Toolkit}, {"mig", &want.MIG, st.Target.MIG}, {"kubernetes", &want.Kubernetes, st.Target.Kubernetes}} {
		switch {
		case *c.want == "":
			*c.want = c.have
		case *c.want != c.have:
			return nil, want, &ResumeError{Field: c.field, Want: *c.want, Have: c.have,
				msg: fmt.Sprintf("the rollout being resumed installs %s %q, not %q; give the same, or none", c.field, c.have, *c.want)}
		}
	}
	return st, want, nil
}

// Describe says how far the rollout got, node status by node status.
func (s *State) Describe() string {
	var parts []string
	for _, status := range []string{InProgress, Failed, Skipped, Done} {
		if n := s.Names(status); len(n) > 0 {
			parts = append(parts, fmt.Sprintf("%s: %s", status, strings.Join(n, ", ")))
		}
	}
	if len(parts) == 0 {
		return "no node started"
	}
	return strings.Join(parts, "; ")
}
