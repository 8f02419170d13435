package engine

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSomeHostsFailed is wrapped by the error of a run in which at least one
// host failed; the CLI maps it to its own exit code.
var ErrSomeHostsFailed = errors.New("some hosts failed")

// ErrUnknownPhase is what an *UnknownPhaseError is (errors.Is): a name to
// select phases by that matches no phase.
var ErrUnknownPhase = errors.New("unknown phase")

// HostError is a failure of one host in one phase. The runner adds it exactly
// once, so messages read "host gpu-007: phase nvidia/driver: <cause>".
type HostError struct {
	Host  string
	Phase string
	Err   error
}

func (e *HostError) Error() string {
	var b strings.Builder
	b.WriteString("host ")
	b.WriteString(e.Host)
	if e.Phase != "" {
		b.WriteString(": phase ")
		b.WriteString(e.Phase)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *HostError) Unwrap() error { return e.Err }

// HostsFailedError is the error of a run with failed hosts. It unwraps to
// ErrSomeHostsFailed and to each host's *HostError.
type HostsFailedError struct {
	Failed, Total int
	Errs          []error
}

// maxListedErrors keeps the message of a 1000-host failure readable; every
// error stays reachable through Unwrap and the summary.
const maxListedErrors = 20

func (e *HostsFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d hosts failed", e.Failed, e.Total)
	for i, err := range e.Errs {
		if i == maxListedErrors {
			fmt.Fprintf(&b, "\n  ... and %d more (see the summary and the host logs)", len(e.Errs)-i)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(err.Error(), "\n", "\n    "))
	}
	return b.String()
}

func (e *HostsFailedError) Unwrap() []error {
	return append([]error{ErrSomeHostsFailed}, e.Errs...)
}
