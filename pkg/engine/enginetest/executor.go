// Package enginetest provides a recording executor and a fake fleet for
// unit tests of the engine and of phases: no network, scripted answers,
// every command and upload recorded.
package enginetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/ssh"
)

// ErrClosed is returned by an Executor used after Close.
var ErrClosed = errors.New("enginetest: executor closed")

// ErrLost is returned by Run on an executor whose connection was lost (Lose).
var ErrLost = errors.New("enginetest: open session: EOF (connection lost)")

// Handler answers one command. The Result's Stdout and Stderr are streamed to
// the command's writers as a real transport would, and a non-zero ExitCode
// with a nil error becomes an *ssh.ExitError.
type Handler func(ctx context.Context, e *Executor, cmd ssh.Command) (ssh.Result, error)

// Upload is a recorded upload.
type Upload struct {
	Path    string
	Mode    uint32
	Content []byte
	Sudo    bool
}

// Executor is a recording engine.Executor for one host.
type Executor struct {
	// Host is the machine name it was dialled for.
	Host string
	// Handler answers commands; nil succeeds with no output.
	Handler Handler
	// UploadErr, when set, fails uploads.
	UploadErr error

	gauge *Gauge

	mu       sync.Mutex
	commands []ssh.Command
	uploads  []Upload
	closed   chan struct{}
	closes   int
	lost     bool
}

// NewExecutor returns an executor for host answering with h.
func NewExecutor(host string, h Handler) *Executor {
	return &Executor{Host: host, Handler: h, closed: make(chan struct{})}
}

// Describe says what the connection is, as pkg/ssh's Client does; the
// engine logs it when it connects.
func (e *Executor) Describe() string { return "enginetest executor for " + e.Host }

// Run records cmd and answers it with Handler.
func (e *Executor) Run(ctx context.Context, cmd ssh.Command) (ssh.Result, error) {
	e.mu.Lock()
	if e.isClosedLocked() {
		e.mu.Unlock()
		return ssh.Result{}, ErrClosed
	}
	if e.lost {
		e.mu.Unlock()
		return ssh.Result{}, ErrLost
	}
	e.commands = append(e.commands, cmd)
	e.mu.Unlock()
	if e.gauge != nil {
		e.gauge.enter()
		defer e.gauge.leave()
	}
	if err := ctx.Err(); err != nil {
		return ssh.Result{}, err
	}
	var res ssh.Result
	var err error
	if e.Handler != nil {
		res, err = e.Handler(ctx, e, cmd)
	}
	if cmd.Stdout != nil && len(res.Stdout) > 0 {
		_, _ = cmd.Stdout.Write(res.Stdout)
	}
	if cmd.Stderr != nil && len(res.Stderr) > 0 {
		_, _ = cmd.Stderr.Write(res.Stderr)
	}
	if err == nil && res.ExitCode != 0 {
		err = &ssh.ExitError{Command: cmd.Name, Code: res.ExitCode, StderrTail: tail(res.Stderr)}
	}
	return res, err
}

// Upload records f.
func (e *Executor) Upload(ctx context.Context, f ssh.File) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var content []byte
	if f.Content != nil {
		var err error
		if content, err = io.ReadAll(f.Content); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.isClosedLocked() {
		return ErrClosed
	}
	e.uploads = append(e.uploads, Upload{Path: f.Path, Mode: uint32(f.Mode), Content: content, Sudo: f.Sudo})
	return e.UploadErr
}

// Close marks the executor closed; commands blocked in a Handler can watch
// ClosedCh, like a session on a dropped connection.
func (e *Executor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closes++
	if !e.isClosedLocked() {
		close(e.closed)
	}
	return nil
}

// Lose ends the connection as a dropped link or a restarted bastion would:
// Alive turns false and every later command fails, connection lost.
func (e *Executor) Lose() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lost = true
}

// Alive says whether the connection stands, as pkg/ssh's Client does.
func (e *Executor) Alive() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.lost && !e.isClosedLocked()
}

// ClosedCh is closed by Close.
func (e *Executor) ClosedCh() <-chan struct{} { return e.closed }

// Closes counts the calls to Close.
func (e *Executor) Closes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closes
}

// Commands returns the commands run so far, in order.
func (e *Executor) Commands() []ssh.Command {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ssh.Command(nil), e.commands...)
}

// Names returns the Name of each command run so far.
func (e *Executor) Names() []string {
	var out []string
	for _, c := range e.Commands() {
		out = append(out, c.Name)
	}
	return out
}

// Uploads returns the uploads so far, in order.
func (e *Executor) Uploads() []Upload {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Upload(nil), e.uploads...)
}

func (e *Executor) isClosedLocked() bool {
	select {
	case <-e.closed:
		return true
	default:
		return false
	}
}

// tail is the last lines of stderr, as the real transport reports them.
func tail(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(bytes.TrimSpace(b)), "\n"), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}
