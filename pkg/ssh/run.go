package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	gossh "golang.org/x/crypto/ssh"
)

// Run runs cmd.Script with bash on the host, as root through sudo when
// cmd.Sudo is set and Config.Sudo says so, and waits for it. Output
// is streamed to cmd.Stdout/cmd.Stderr and captured (MaxCapture bytes each)
// in the Result. A non-zero exit returns the Result and an *ExitError (or an
// *AuthError when sudo refused the password). Cancelling ctx ends the run
// promptly and kills the script's remote process tree; the error then wraps
// ctx.Err(). A connection that died under the run gives a retryable error.
func (c *Client) Run(ctx context.Context, cmd Command) (Result, error) {
	name := cmd.Name
	if name == "" {
		name = "script"
	}
	fail := func(err error) (Result, error) {
		return Result{ExitCode: -1}, fmt.Errorf("%s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	mode := noSudo
	if cmd.Sudo && c.cfg.useSudo() {
		mode = sudoNoPasswd
		if c.cfg.SudoPassword != "" {
			mode = sudoWithPassword
		}
	}
	marker, err := newMarker()
	if err != nil {
		return fail(err)
	}
	inv, err := buildInvocation(cmd, mode, c.cfg.SudoPassword, marker)
	if err != nil {
		return fail(err)
	}
	release, err := c.acquire(ctx)
	if err != nil {
		return fail(err)
	}
	defer release()

	stdout, stderr := newCapture(cmd.Stdout), newCapture(cmd.Stderr)
	type started struct {
		sess  *gossh.Session
		stdin io.WriteCloser
	}
	st, err := opened(ctx, c.done, func() (started, error) {
		sess, err := c.conn.NewSession()
		if err != nil {
			return started{}, fmt.Errorf("open session: %w", c.lostCause(err))
		}
		sess.Stdout, sess.Stderr = stdout, stderr
		stdin, err := sess.StdinPipe()
		if err != nil {
			sess.Close()
			return started{}, fmt.Errorf("stdin: %w", err)
		}
		if err := sess.Start(inv.line); err != nil {
			sess.Close()
			return started{}, fmt.Errorf("start: %w", c.lostCause(err))
		}
		return started{sess, stdin}, nil
	}, func(st started) { st.sess.Close() })
	if err != nil {
		return fail(err)
	}
	sess, stdin := st.sess, st.stdin
	defer sess.Close()
	// stdin stays open after the payload: its end is the remote watchdog's
	// signal that the client is gone. A failed write means the remote side
	// already quit (sudo refused, say); Wait reports that.
	go stdin.Write(inv.stdin) //nolint:errcheck

	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		// Closing the channel ends the remote stdin: the watchdog kills the
		// process group. (No separate EOF: CloseWrite would race with the
		// payload writer.) Do not wait for the host to confirm: it may be gone.
		sess.Close()
		res := Result{ExitCode: -1, Stdout: stdout.stop(), Stderr: stderr.stop()}
		return res, fmt.Errorf("%s: %w", name, ctx.Err())
	case <-c.done:
		res := Result{ExitCode: -1, Stdout: stdout.stop(), Stderr: stderr.stop()}
		return res, fmt.Errorf("%s: %w", name, ErrClosed)
	}
	res := Result{Stdout: stdout.stop(), Stderr: stderr.stop()}
	if err == nil {
		return res, nil
	}
	var xe *gossh.ExitError
	if !errors.As(err, &xe) {
		// ExitMissingError or a transport error: the connection went away.
		res.ExitCode = -1
		if cause := c.lostCause(err); cause != err {
			err = cause
		} else {
			err = fmt.Errorf("%w: %w", errConnectionLost, err)
		}
		return res, fmt.Errorf("%s: %w", name, err)
	}
	ee := &ExitError{
		Command:    name,
		Code:       xe.ExitStatus(),
		Signal:     xe.Signal(),
		StderrTail: c.red.String(stderr.lastLines()),
	}
	if ee.Signal != "" {
		ee.Code = 128 + signalNumber(ee.Signal)
	}
	res.ExitCode = ee.Code
	if mode != noSudo && ee.Code == 1 && sudoRefused(ee.StderrTail) {
		return res, &AuthError{Host: c.cfg.Name, Address: c.Address(), User: c.cfg.User, Sudo: true, Err: ee}
	}
	return res, ee
}

// sudoRefused recognises sudo's own failures to authenticate.
func sudoRefused(stderrTail string) bool {
	for _, m := range []string{"incorrect password attempt", "a password is required", "a terminal is required"} {
		if strings.Contains(stderrTail, m) {
			return true
		}
	}
	return false
}

// signalNumber maps an SSH signal name (RFC 4254 6.10) to its Linux number.
func signalNumber(name string) int {
	switch name {
	case "HUP":
		return 1
	case "INT":
		return 2
	case "QUIT":
		return 3
	case "ILL":
		return 4
	case "ABRT":
		return 6
	case "FPE":
		return 8
	case "KILL":
		return 9
	case "USR1":
		return 10
	case "SEGV":
		return 11
	case "USR2":
		return 12
	case "PIPE":
		return 13
	case "ALRM":
		return 14
	case "TERM":
		return 15
	}
	return 0
}
