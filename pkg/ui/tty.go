package ui

import (
	"io"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/gpukit/gpukit/pkg/event"
)

// frameInterval is how often the TTY view is redrawn: fast enough to feel
// live, slow enough that a 1000-host run costs a few renders a second.
const frameInterval = 100 * time.Millisecond

// maxPending bounds the events held between frames. If the terminal stops
// reading (a paused tmux pane, Ctrl-S), output lines beyond it are dropped
// from the display rather than growing memory or blocking the engine; they
// are still in the host logs. State events are always kept.
const maxPending = 200_000

// TTY is the live terminal display: a bubbletea program fed with batches of
// events, one per frame.
type TTY struct {
	out  io.Writer
	prog *tea.Program

	mu      sync.Mutex
	pending []event.Event
	closed  bool

	stop      chan struct{} // ends the frame pump
	pumpDone  chan struct{}
	exited    chan struct{} // the program has ended and the summary is out
	closeOnce sync.Once
	err       error
}

// NewTTY starts the live display on out, which should be a terminal whose
// colours are profile (Decide says which; termenv.Ascii for none).
func NewTTY(out io.Writer, profile termenv.Profile, opts ...Option) *TTY {
	o := collect(opts)
	r := lipgloss.NewRenderer(out)
	r.SetColorProfile(profile)
	m := newModel(o.title, ttyStyles(r), o.cancel)
	popts := []tea.ProgramOption{
		tea.WithOutput(out),
		// The CLI owns signals (its context); Ctrl-C arrives here as a key
		// because the terminal is in raw mode, and is passed on via cancel.
		tea.WithoutSignalHandler(),
	}
	d := &TTY{
		out:  out,
		prog: tea.NewProgram(m, popts...),
		stop: make(chan struct{}), pumpDone: make(chan struct{}), exited: make(chan struct{}),
	}
	go d.run(m)
	go d.pump()
	return d
}

// Emit queues e for the next frame; it never waits for the terminal.
func (d *TTY) Emit(e event.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if len(d.pending) >= maxPending && e.Type == event.Output {
		return
	}
	d.pending = append(d.pending, e)
}

// Close delivers the last events, waits for the program to end (it ends by
// itself after RunDone), restores the terminal and prints the summary.
func (d *TTY) Close() error {
	d.closeOnce.Do(func() {
		close(d.stop)
		<-d.pumpDone
		d.flush(time.Now())
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		d.prog.Send(closeMsg{}) // returns at once if the program has ended
		<-d.exited
	})
	return d.err
}

func (d *TTY) run(m *model) {
	defer close(d.exited)
	_, err := d.prog.Run()
	if err != nil {
		d.err = err
	}
	// The terminal is restored; the summary goes below the final view and
	// scrolls like ordinary output, however many hosts failed.
	if _, werr := io.WriteString(d.out, "\n"+summary(m.t, m.st, 0)); werr != nil && d.err == nil {
		d.err = werr
	}
	if m.interrupted {
		interruptSelf()
	}
}

func (d *TTY) pump() {
	defer close(d.pumpDone)
	tick := time.NewTicker(frameInterval)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-d.exited:
			return
		case now := <-tick.C:
			d.flush(now)
		}
	}
}

// flush hands the pending events to the program as one message; with none
// pending it still moves the clocks.
func (d *TTY) flush(now time.Time) {
	d.mu.Lock()
	batch := d.pending
	d.pending = nil
	d.mu.Unlock()
	d.prog.Send(batchMsg{events: batch, now: now})
}

// interruptSelf passes an unhandled Ctrl-C on as SIGINT, once the terminal
// is back in cooked mode, so that the CLI's signal context sees it.
func interruptSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(os.Interrupt)
	}
}
