package ssh

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Bounds of ExitError.StderrTail.
const (
	tailLines = 20
	tailBytes = 2 << 10
)

// capture is a command's stdout or stderr: streamed to the caller's writer as
// it arrives, kept up to MaxCapture bytes for the Result, and its last bytes
// kept for the error message. After stop, late data (a session being torn
// down after a cancelled Run returned) is dropped, so the caller's writer is
// never written to after Run returns.
type capture struct {
	mu      sync.Mutex
	stream  io.Writer
	buf     bytes.Buffer
	tail    []byte
	stopped bool
}

func newCapture(stream io.Writer) *capture { return &capture{stream: stream} }

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return len(p), nil
	}
	if c.stream != nil {
		if _, err := c.stream.Write(p); err != nil {
			c.stream = nil // a broken consumer must not break the command
		}
	}
	if room := MaxCapture - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*tailBytes {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-tailBytes:]...)
	}
	return len(p), nil
}

// stop ends streaming and returns what was captured.
func (c *capture) stop() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	return bytes.Clone(c.buf.Bytes())
}

// lastLines is the tail for ExitError: at most tailLines lines and tailBytes
// bytes, without the trailing newline.
func (c *capture) lastLines() string {
	c.mu.Lock()
	t := string(c.tail)
	c.mu.Unlock()
	t = strings.TrimRight(t, "\r\n")
	if len(t) > tailBytes {
		t = t[len(t)-tailBytes:]
		if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
			t = t[i+1:] // drop the partial first line
		}
	}
	lines := strings.Split(t, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.Join(lines, "\n")
}
