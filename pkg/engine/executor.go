package engine

import (
	"context"

	"github.com/gpukit/gpukit/pkg/ssh"
)

// Executor runs commands on one host. pkg/ssh.Client is the real one; tests
// may use a recording executor (pkg/engine/enginetest).
//
// The runner keeps one Executor per host for the whole run and calls Close
// once at the end. When a cancelled run's steps do not return within
// Runner.CancelGrace, it calls Close while Run or Upload are still in flight:
// an Executor must allow that, and those calls must then return promptly.
type Executor interface {
	// Run runs cmd and returns its result; a non-zero exit is an *ssh.ExitError.
	Run(ctx context.Context, cmd ssh.Command) (ssh.Result, error)
	// Upload places a file on the host with the given mode.
	Upload(ctx context.Context, f ssh.File) error
	Close() error
}
