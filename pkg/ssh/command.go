// Package ssh is gpukit's transport: one authenticated, host-key-verified SSH
// connection per host (github.com/melbahja/goph on golang.org/x/crypto/ssh),
// reused by every step of a run. Scripts, their arguments and the sudo
// password go to bash over stdin, never on the command line, so neither their
// contents nor secrets show in `ps` or sudo's logs (see wrapper.go).
//
// Dial connects (known_hosts verification, accept-new, key/agent/password
// auth, bastion, bounded retries); Client.Run runs a script, Client.Upload
// places a file; errors are typed (HostKeyChangedError, UnknownHostError,
// AuthError, ConnectError, ExitError) and IsRetryable classifies them.
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
	// Script is sent on stdin and run by bash (with stdin /dev/null, so a
	// command reading stdin cannot swallow the rest of the script).
	Script string
	// Args are the script's $1, $2, ...; they travel on stdin too, so they
	// need no quoting and do not show in `ps` (they may hold secrets). They
	// must not contain NUL bytes.
	Args []string
	// Sudo runs the script as root, through sudo unless Config.Sudo says otherwise.
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
	// Sudo installs it as root, through sudo unless Config.Sudo says otherwise.
	Sudo bool
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Command string
	// Code is the exit status; 128+n when the remote process died of signal n.
	Code int
	// Signal is set ("KILL", "TERM", ...) when the host reported that the
	// remote command was killed by a signal.
	Signal string
	// StderrTail is the end of stderr (at most 20 lines, 2 KiB).
	StderrTail string
}

func (e *ExitError) Error() string {
	status := fmt.Sprintf("exit status %d", e.Code)
	if e.Signal != "" {
		status = "killed by signal " + e.Signal
	}
	if e.StderrTail == "" {
		return fmt.Sprintf("%s: %s", e.Command, status)
	}
	return fmt.Sprintf("%s: %s: %s", e.Command, status, e.StderrTail)
}
