package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/redact"
	"github.com/gpukit/gpukit/pkg/safetext"
)

// runLogs is one run's log directory: LogDir/<timestamp>/run.log for the run
// as a whole and <host>.log per host. Every line is redacted before it is
// written. A zero runLogs (no LogDir) writes nothing.
type runLogs struct {
	dir      string
	redactor *redact.Redactor
	run      *logFile
}

// logTimeLayout names run directories so that they sort by start time.
const logTimeLayout = "20060102-150405"

func openRunLogs(base string, start time.Time, r *redact.Redactor) (*runLogs, error) {
	if base == "" {
		return &runLogs{redactor: r}, nil
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	// Two runs may start within the same second (CI, scripts): suffix the
	// second one rather than mixing their logs.
	name := start.Format(logTimeLayout)
	var dir string
	for i := 1; ; i++ {
		dir = filepath.Join(base, name)
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", dir, i)
		}
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return nil, fmt.Errorf("log directory: %w", err)
		}
	}
	l := &runLogs{dir: dir, redactor: r}
	l.run = &logFile{path: filepath.Join(dir, "run.log"), redactor: r}
	// Fail now, not silently at the first line, when the directory is unusable.
	if err := l.run.open(); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return l, nil
}

// host returns the log of one host; nil (which discards) without a directory.
func (l *runLogs) host(name string) *logFile {
	if l.dir == "" {
		return nil
	}
	return &logFile{path: l.hostPath(name), redactor: l.redactor}
}

func (l *runLogs) hostPath(name string) string {
	if l.dir == "" {
		return ""
	}
	return filepath.Join(l.dir, safeFileName(name)+".log")
}

func (l *runLogs) close() error {
	return l.run.close()
}

// safeFileName keeps a host name from escaping the run directory.
func safeFileName(name string) string {
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, name)
	if name == "" || name == "." || name == ".." || name == "run" {
		name = "_" + name
	}
	return name
}

// logFile is one append-only log. Lines are written unbuffered so that a
// crashed or killed run still leaves everything up to the crash on disk. The
// file is opened on first write and released by the runner after each phase
// of its host, so that a 1000-host run holds about Concurrency log files open
// rather than one per host beside one SSH connection per host.
type logFile struct {
	path     string
	redactor *redact.Redactor

	mu sync.Mutex
	f  *os.File
}

func (l *logFile) open() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.openLocked()
}

func (l *logFile) openLocked() error {
	if l.f != nil {
		return nil
	}
	// 0600: logs hold host output, which may be sensitive even when redacted.
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	l.f = f
	return nil
}

// write logs text, one timestamped line per line of text, redacted, with
// anything a terminal would act on escaped (a log is read with cat and less;
// host output carries colours, progress bars and worse).
func (l *logFile) write(t time.Time, prefix, text string) {
	if l == nil {
		return
	}
	text = l.redactor.String(text)
	stamp := t.Format("15:04:05.000 ")
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(stamp)
		b.WriteString(prefix)
		b.WriteString(safetext.Escape(line))
		b.WriteByte('\n')
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// A log that cannot be written must not fail the host: the events still
	// carry everything, so the line is dropped.
	if l.openLocked() == nil {
		_, _ = l.f.WriteString(b.String())
	}
}

// close releases the file; a later write opens it again.
func (l *logFile) close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
