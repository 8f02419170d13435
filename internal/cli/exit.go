package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/engine"
)

// Exit codes, documented in the README.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2 // bad input or usage: nothing was changed on any host
	ExitHostsFailed = 3 // the run finished, but some hosts failed
)

// usage marks bad flags, arguments or input files as the flows mark the
// bad input they find: a *flow.InputError, exit 2.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &flow.InputError{Err: err}
}

// hostsFailedError marks a run that finished with some hosts failed. The
// display has already named each failed host with its error, so the message
// is one line.
type hostsFailedError struct{ err error }

func (e *hostsFailedError) Error() string {
	var hf *engine.HostsFailedError
	if errors.As(e.err, &hf) {
		return fmt.Sprintf("%d of %d hosts failed (named in the summary above; their logs say why)", hf.Failed, hf.Total)
	}
	return e.err.Error()
}
func (e *hostsFailedError) Unwrap() error { return e.err }

// exitCode maps an error kind to the process exit status.
func exitCode(err error) int {
	var ie *flow.InputError
	var hf *hostsFailedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ie):
		return ExitUsage
	case errors.As(err, &hf):
		return ExitHostsFailed
	case errors.Is(err, context.Canceled):
		return ExitFailure
	default:
		return ExitFailure
	}
}
