// Package ssh is gpukit's transport: one authenticated, host-key-verified SSH
// connection per host (github.com/melbahja/goph on golang.org/x/crypto/ssh),
// reused by every step of a run. Scripts go to `bash -s` over stdin, never on
// the command line, so neither their contents nor secrets show in `ps`.
package ssh

import (
	"fmt"
	"io"
	"os"
)

// Command is one script run on a host.
type Command struct {
	// Name is a short label for logs and errors ("probe facts").
	Name string
	// Script is piped to `bash -s` on stdin.
	Script string
	// Args are passed to the script as $1, $2, ... (shell-quoted by the transport).
	Args []string
	// Sudo runs the script as root through sudo when the login user is not root.
	Sudo bool
	// Stdout and Stderr, when set, receive the output as it arrives; Result holds
	// it too, capped at MaxCapture bytes each.
	Stdout, Stderr io.Writer
}

// MaxCapture bounds the output kept in a Result.
const MaxCapture = 4 << 20

// Result is what a finished command left.
type Result struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
}

// File is a file to place on a host.
type File struct {
	// Path on the host (absolute).
	Path    string
	Mode    os.FileMode
	Content io.Reader
	// Sudo installs it as root through sudo when the login user is not root.
	Sudo bool
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Command    string
	Code       int
	StderrTail string
}

func (e *ExitError) Error() string {
	if e.StderrTail == "" {
		return fmt.Sprintf("%s: exit status %d", e.Command, e.Code)
	}
	return fmt.Sprintf("%s: exit status %d: %s", e.Command, e.Code, e.StderrTail)
}
