package ui

import "github.com/charmbracelet/lipgloss"

// paint colours a piece of text; the plain display uses identity paints, so
// one rendering path serves both and plain output has no escape codes.
type paint func(string) string

type styles struct {
	ok, fail, warn, dim, bold, accent paint
}

func plainStyles() styles {
	id := func(s string) string { return s }
	return styles{ok: id, fail: id, warn: id, dim: id, bold: id, accent: id}
}

// ttyStyles binds colours to the renderer's colour profile (the one Decide
// chose), so that a 16-colour terminal or NO_COLOR gets what it can show.
func ttyStyles(r *lipgloss.Renderer) styles {
	style := func(s lipgloss.Style) paint { return func(x string) string { return s.Render(x) } }
	return styles{
		ok:     style(r.NewStyle().Foreground(lipgloss.Color("2"))),
		fail:   style(r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)),
		warn:   style(r.NewStyle().Foreground(lipgloss.Color("3"))),
		dim:    style(r.NewStyle().Faint(true)),
		bold:   style(r.NewStyle().Bold(true)),
		accent: style(r.NewStyle().Foreground(lipgloss.Color("6"))),
	}
}
