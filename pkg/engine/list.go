package engine

// Listed is one entry of a command's phase list, as `--list-phases` prints
// it: a phase, or a rollout with the phases it runs wave by wave.
type Listed struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Phases are a rollout's, in the order each wave runs them.
	Phases []Listed `json:"phases,omitempty"`
}

// List describes phases as a run would take them, rollouts opened up, so
// that the list a user reads is the one that runs, never a copy of it.
func List(phases []Phase) []Listed {
	out := make([]Listed, 0, len(phases))
	for _, p := range phases {
		l := Listed{Name: p.Name(), Title: p.Title()}
		if ro, ok := asRollout(p); ok {
			l.Phases = List(ro.Phases)
		}
		out = append(out, l)
	}
	return out
}
