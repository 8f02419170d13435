package engine

import (
	"context"

	"github.com/gpukit/gpukit/pkg/ssh"
)

// Executor runs commands on one host. pkg/ssh.Client is the real one; tests
// may use a recording executor.
type Executor interface {
	// Run runs cmd and returns its result; a non-zero exit is an *ssh.ExitError.
	Run(ctx context.Context, cmd ssh.Command) (ssh.Result, error)
	// Upload places a file on the host with the given mode.
	Upload(ctx context.Context, f ssh.File) error
	Close() error
}
