package engine

import (
	"bytes"
	"sync"
)

// maxLineBytes bounds a line kept while waiting for its newline, so that a
// command printing megabytes without one cannot grow memory without bound.
const maxLineBytes = 64 << 10

// lineWriter turns a command's output stream into lines: it splits on "\n"
// and on "\r" (progress bars of apt, curl, dkms redraw with carriage returns),
// drops empty lines and hands each to emit. The transport may write from its
// own goroutine, hence the lock.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			w.buf = append(w.buf, p...)
			if len(w.buf) >= maxLineBytes {
				w.flushLocked()
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.flushLocked()
		p = p[i+1:]
	}
	return n, nil
}

// Flush emits a last line that had no newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

func (w *lineWriter) flushLocked() {
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
	}
	w.buf = w.buf[:0]
}
