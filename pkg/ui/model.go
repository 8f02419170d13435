package ui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpukit/gpukit/pkg/event"
)

// batchMsg delivers the events that arrived since the last frame. The TTY
// display sends one per frame (and one with no events, to move the clocks),
// so the view is computed at most once per frame however many events come:
// 1000 hosts printing build logs would otherwise mean a render per line.
type batchMsg struct {
	events []event.Event
	now    time.Time
}

// closeMsg asks the program to finish (Display.Close).
type closeMsg struct{}

// model is the bubbletea model of the TTY display.
type model struct {
	t             *tracker
	st            styles
	width, height int
	now           time.Time
	cancel        context.CancelFunc
	cancelling    bool
	quitting      bool
	// interrupted: Ctrl-C without a cancel func; the display raises SIGINT
	// once the terminal is restored.
	interrupted bool
}

func newModel(title string, st styles, cancel context.CancelFunc) *model {
	return &model{t: newTracker(title), st: st, cancel: cancel}
}

func (m *model) Init() tea.Cmd { return nil }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case batchMsg:
		for _, e := range msg.events {
			m.t.apply(e)
		}
		if !msg.now.IsZero() {
			m.now = msg.now
		}
		if m.t.done {
			m.quitting = true
			return m, tea.Quit
		}
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		if msg.Type != tea.KeyCtrlC {
			break
		}
		switch {
		case m.cancel == nil:
			m.interrupted, m.quitting = true, true
			return m, tea.Quit
		case m.cancelling: // a second Ctrl-C: stop waiting for the run
			m.quitting = true
			return m, tea.Quit
		default:
			m.cancelling = true
			m.cancel()
		}
	case closeMsg:
		m.quitting = true
		return m, tea.Quit
	}
	return m, nil
}

// clock is the time the view is drawn at: the last frame's, or the last
// event's when frames carry none (tests).
func (m *model) clock() time.Time {
	if !m.now.IsZero() {
		return m.now
	}
	if m.t.done {
		return m.t.result.Time
	}
	return m.t.start
}
