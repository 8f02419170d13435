// Command nvidia-persistenced is the lab's GPU SIMULATOR stand-in for
// NVIDIA's persistence daemon. Test tooling only, never shipped; the stand-in
// nvidia-persistenced package installs it with NVIDIA's systemd unit.
//
// It takes the real daemon's options (--user, --group, --persistence-mode,
// --no-persistence-mode, --verbose, --foreground, --version), fails to start
// like the real one when no driver is loaded or the loaded module is not the
// installed libraries' version, forks into the background (the unit is
// Type=forking), records its pid in /run/nvidia-persistenced/ and runs until
// it is stopped. The nvidia-smi stand-in reports persistence mode Enabled
// while a daemon started without --no-persistence-mode runs.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpukit/gpukit/test/gpusim/hoststate"
)

const label = "gpukit GPU SIMULATOR stand-in"

// versionFile is the stand-in package's version.
const versionFile = "/usr/share/gpusim/nvidia-persistenced.version"

// childEnv marks the forked daemon.
const childEnv = "GPUSIM_PERSISTENCED_DAEMON"

func main() {
	os.Exit(run(hoststate.FromEnv(), os.Args, os.Stderr))
}

func run(h hoststate.Host, argv []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("nvidia-persistenced", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "run as this user")
	fs.StringVar(user, "u", "", "run as this user")
	group := fs.String("group", "", "run with this group")
	fs.StringVar(group, "g", "", "run with this group")
	fs.Bool("persistence-mode", true, "enable persistence mode (the default)")
	fs.Bool("p", true, "enable persistence mode (the default)")
	fs.Bool("no-persistence-mode", false, "start with persistence mode off")
	verbose := fs.Bool("verbose", false, "verbose log")
	fs.BoolVar(verbose, "V", false, "verbose log")
	foreground := fs.Bool("foreground", false, "do not fork")
	fs.BoolVar(foreground, "f", false, "do not fork")
	version := fs.Bool("version", false, "print the version")
	fs.BoolVar(version, "v", false, "print the version")
	if err := fs.Parse(argv[1:]); err != nil {
		return 1
	}
	// its own version: the package's (the real daemon checks the module against it)
	own := h.FirstLine(versionFile)
	if own == "" {
		own = h.Library()
	}
	if *version {
		fmt.Printf("\nnvidia-persistenced:  version %s  (%s)\n\n", own, label)
		return 0
	}
	fail := func(why string) int {
		fmt.Fprintf(stderr, "nvidia-persistenced failed to initialize. Check syslog for more details.\n(%s: %s)\n", label, why)
		return 1
	}
	if *user != "" && !userExists(h, *user) {
		return fail("Failed to lookup user " + *user)
	}
	loaded, _ := h.Loaded()
	switch {
	case loaded == "":
		return fail("Failed to open /dev/nvidiactl: the NVIDIA kernel module is not loaded")
	case own == "":
		return fail("no driver libraries installed")
	case loaded != own:
		return fail(fmt.Sprintf("API mismatch: the NVIDIA kernel module has version %s, but this NVIDIA driver component has version %s", loaded, own))
	}
	if !*foreground && os.Getenv(childEnv) == "" {
		return daemonize(argv, stderr)
	}
	return serve(h, *verbose, stderr)
}

// daemonize starts the daemon in a session of its own and returns once it
// has written its pid file, as a Type=forking unit expects.
func daemonize(argv []string, stderr io.Writer) int {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cmd := exec.Command(exe, argv[1:]...)
	cmd.Args[0] = argv[0] // the pid's command line is the daemon's own
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	w.Close()
	ready, _ := bufio.NewReader(r).ReadString('\n')
	if strings.TrimSpace(ready) != "ready" {
		fmt.Fprintln(stderr, "nvidia-persistenced failed to initialize. Check syslog for more details.")
		return 1
	}
	return 0
}

func serve(h hoststate.Host, verbose bool, stderr io.Writer) int {
	pidFile := filepath.Join(h.Root, hoststate.PersistencedPIDFile)
	if err := os.MkdirAll(filepath.Dir(pidFile), 0o755); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if verbose {
		fmt.Fprintf(stderr, "nvidia-persistenced: Started (%d) (%s)\n", os.Getpid(), label)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getenv(childEnv) != "" {
		ready := os.NewFile(3, "ready")
		fmt.Fprintln(ready, "ready")
		ready.Close()
		// detached: nothing to print to any more
		if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
			_ = syscall.Dup2(int(null.Fd()), 0)
			_ = syscall.Dup2(int(null.Fd()), 1)
			_ = syscall.Dup2(int(null.Fd()), 2)
		}
	}
	<-stop
	os.Remove(pidFile)
	return 0
}

func userExists(h hoststate.Host, name string) bool {
	b, err := os.ReadFile(filepath.Join(h.Root, "/etc/passwd"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if n, _, _ := strings.Cut(line, ":"); n == name {
			return true
		}
	}
	return false
}
