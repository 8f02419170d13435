package ssh

import (
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// How a script reaches the host
//
// The command line the host sees is fixed text: a small bash program (the
// runner, below) and a random marker, through sudo when asked. Everything
// else - the sudo password, the arguments, the script - travels on stdin:
//
//	[sudo password "\n"]        only with sudo -S; sudo reads exactly this line
//	marker "\n"
//	len(args) "\n"  arg "\0" ...
//	len(script) "\n"  script  marker "\n"
//
// and stdin then stays open until the client is done with the session.
//
// The runner skips whatever precedes the marker (the password line when sudo
// did not need it, e.g. NOPASSWD rules: it is then never executed, echoed or
// logged), reads the arguments and the whole script - nothing runs before the
// end marker arrived, so a payload cut short runs nothing - and evaluates the
// script in a subshell with stdin /dev/null - so a command in the script that
// reads stdin (apt, ssh, read) cannot swallow the rest of the payload - with
// the arguments as its positional parameters (no exec: they are no process's
// argv). The runner is in monitor mode, so that subshell and its whole process
// tree are one process group of their own; a subshell, not `setsid bash`,
// because the two execs cost the host more CPU than the probe itself on a
// small machine.
// A watchdog waits for stdin to end: that happens only when the client closes
// the session (cancelled Run) or the connection dies, and it then sends TERM,
// and KILL two seconds later, to that process group. A cancelled or orphaned
// run therefore leaves no remote process behind - also under sudo, where the
// login user could not signal root's processes, as the runner itself runs as
// root.
//
// The runner exits with the script's exit status (128+n when the script died
// of signal n, as bash reports it).
// The runner is runner.sh printed on one line without its comments (mvdan.cc/sh
// parses and prints it): it travels on the command line, which the login
// shell, whatever it is, must read as one word, and which sshd and ps show.
//
//go:embed runner.sh
var runnerFile string

// runner is made once, on first use: not at package init, which every
// command would pay for (gpukit --help too).
var runner = sync.OnceValue(func() string { return mustOneLine(runnerFile) })

// bashRunner is the quoted `bash -c RUNNER` every command line starts with.
var bashRunner = sync.OnceValue(func() string {
	q, err := syntax.Quote(runner(), syntax.LangPOSIX)
	if err != nil {
		panic(fmt.Sprintf("ssh: quote runner.sh: %v", err)) // a build defect, caught by every test
	}
	return "bash -c " + q
})

func mustOneLine(script string) string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "runner.sh")
	if err != nil {
		panic(fmt.Sprintf("ssh: embedded runner.sh: %v", err)) // a build defect, caught by every test
	}
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&b, f); err != nil {
		panic(fmt.Sprintf("ssh: embedded runner.sh: %v", err))
	}
	return strings.TrimSpace(b.String())
}

// sudoMode is how a command gets root.
type sudoMode int

const (
	noSudo           sudoMode = iota
	sudoNoPasswd              // sudo -n: fail rather than prompt
	sudoWithPassword          // sudo -S: password on the first line of stdin
)

// invocation is one script run: the command line and what goes on stdin.
type invocation struct {
	line  string
	stdin []byte
}

func newMarker() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random marker: %w", err)
	}
	return "gpukit-" + hex.EncodeToString(b), nil
}

// buildInvocation validates the command and lays out the command line and
// stdin for it.
func buildInvocation(cmd Command, mode sudoMode, sudoPassword, marker string) (invocation, error) {
	if strings.IndexByte(cmd.Script, 0) >= 0 {
		return invocation{}, fmt.Errorf("script contains a NUL byte")
	}
	for i, a := range cmd.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return invocation{}, fmt.Errorf("argument %d contains a NUL byte", i+1)
		}
	}
	line := bashRunner() + " gpukit " + marker
	var in strings.Builder
	switch mode {
	case sudoNoPasswd:
		line = "sudo -n -H -- " + line
	case sudoWithPassword:
		if strings.ContainsAny(sudoPassword, "\n\r") {
			return invocation{}, fmt.Errorf("sudo password contains a line break")
		}
		// -k: ignore cached credentials, so sudo always reads the line
		// (when the policy wants a password at all); -p '': no prompt.
		line = "sudo -k -S -p '' -H -- " + line
		in.WriteString(sudoPassword)
		in.WriteByte('\n')
	}
	in.WriteString(marker)
	in.WriteByte('\n')
	in.WriteString(strconv.Itoa(len(cmd.Args)))
	in.WriteByte('\n')
	for _, a := range cmd.Args {
		in.WriteString(a)
		in.WriteByte(0)
	}
	in.WriteString(strconv.Itoa(len(cmd.Script)))
	in.WriteByte('\n')
	in.WriteString(cmd.Script)
	in.WriteString(marker)
	in.WriteByte('\n')
	return invocation{line: line, stdin: []byte(in.String())}, nil
}
