package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpukit/gpukit/pkg/event"
)

// Rollout is a group of phases run over the hosts wave by wave, as a rolling
// upgrade needs: every phase of the group on the first wave's hosts (phase by
// phase, as a run's phases), then on the next wave's, and so on. Next
// chooses each wave once the one before is over, knowing how it ended, so
// that the number of hosts taken out of service at once stays within a
// budget that the failures so far (hosts left out of service) reduce.
//
// A Rollout sits in a command's phase list like a phase; its Run is never
// called. Its phases are named in RunStart after the group, and their
// PhaseStart and PhaseDone come once per wave. A host that fails in a wave is
// failed for the rest of the run, as in any phase; hosts the rollout never
// reached are skipped with Next's reason and take no part in later phases.
type Rollout struct {
	// Name and Title are the group's: "upgrade/rollout".
	Name, Title string
	Phases      []Phase
	// Next returns the next wave among pending (the healthy hosts not yet
	// in a wave, in run order), given the outcome of every host of the waves
	// so far, in the order they finished their wave.
	Next func(ctx context.Context, pending []*Host, done []Outcome) Wave
	// Leave, when set, is asked after each phase of a wave about each of
	// its hosts: a reason takes the host out of the rest of the group (and
	// of the run), skipped with that reason - a node whose workloads must
	// not be disturbed, handed back untouched.
	Leave func(h *Host) string
}

// Wave is Next's answer.
type Wave struct {
	// Hosts are worked on now, all of them through every phase of the
	// group. None ends the rollout.
	Hosts []*Host
	// Skip leaves hosts out of the rollout for good, each with why
	// (reported as the host skipped in the group).
	Skip map[*Host]string
	// Stop ends the rollout after this answer's skips: why, for the hosts
	// still pending (reported as their skip reason). Empty with no Hosts:
	// the rollout is over and every pending host is skipped as "not part of
	// the rollout".
	Stop string
}

// Outcome is how one host of a wave ended.
type Outcome struct {
	Host *Host
	// Err is the host's failure (a *HostError naming the phase), nil when
	// every phase of the group ran or skipped on it.
	Err error
	// Left is Leave's reason when the wave left the host.
	Left string
}

// rolloutPhase is the Phase face of a Rollout, for phase lists and selection.
type rolloutPhase struct{ *Rollout }

func (p rolloutPhase) Name() string  { return p.Rollout.Name }
func (p rolloutPhase) Title() string { return p.Rollout.Title }
func (p rolloutPhase) Run(context.Context, *Host) error {
	return errors.New("engine: a rollout runs through Runner.Run, wave by wave")
}

// Phase returns r as an entry of a phase list.
func (r *Rollout) Phase() Phase { return rolloutPhase{r} }

// asRollout is p's Rollout when p is one.
func asRollout(p Phase) (*Rollout, bool) {
	rp, ok := p.(rolloutPhase)
	if !ok {
		return nil, false
	}
	return rp.Rollout, true
}

// phaseNames are the names RunStart announces for p: a rollout's and each of
// its phases'.
func phaseNames(p Phase) []string {
	ro, ok := asRollout(p)
	if !ok {
		return []string{p.Name()}
	}
	names := []string{ro.Name}
	for _, sp := range ro.Phases {
		names = append(names, sp.Name())
	}
	return names
}

// runRollout runs ro over healthy, wave by wave, and returns how many hosts
// failed in it.
func (r *Runner) runRollout(ctx context.Context, st *runState, limit int, ro *Rollout, healthy []*hostRun) int {
	start := st.now()
	st.emit(event.Event{Type: event.PhaseStart, Phase: ro.Name, Title: ro.Title, Total: len(healthy)})
	byHost := make(map[*Host]*hostRun, len(healthy))
	pending := make([]*hostRun, 0, len(healthy))
	for _, hr := range healthy {
		byHost[hr.h] = hr
		pending = append(pending, hr)
	}
	var done []Outcome
	var ok, failed, skipped int
	skip := func(hr *hostRun, why string) {
		hr.h.phase = ro.Name
		r.record(ctx, st, hr, ro.Name, st.now(), why, nil)
		hr.status, hr.phase, hr.reason = StatusSkipped, ro.Name, why
		_ = hr.h.log.close()
		skipped++
	}
	stop := ""
	for ctx.Err() == nil {
		hosts := make([]*Host, len(pending))
		for i, hr := range pending {
			hosts[i] = hr.h
		}
		w := ro.Next(ctx, hosts, done)
		var left []*hostRun
		for _, hr := range pending {
			if why, ok := w.Skip[hr.h]; ok {
				skip(hr, why)
				continue
			}
			left = append(left, hr)
		}
		pending = left
		if w.Stop != "" || len(w.Hosts) == 0 {
			stop = w.Stop
			break
		}
		var wave []*hostRun
		inWave := map[*hostRun]bool{}
		for _, h := range w.Hosts {
			if hr := byHost[h]; hr != nil && !inWave[hr] && hr.status == "" {
				wave = append(wave, hr)
				inWave[hr] = true
			}
		}
		if len(wave) == 0 {
			stop = fmt.Sprintf("engine: rollout %s chose no pending host", ro.Name)
			break
		}
		left = nil
		for _, hr := range pending {
			if !inWave[hr] {
				left = append(left, hr)
			}
		}
		pending = left
		for _, p := range ro.Phases {
			alive := healthyHosts(wave)
			if len(alive) == 0 || ctx.Err() != nil {
				break
			}
			r.runPipeline(ctx, st, limit, nil, []Phase{p}, alive) // a rollout stops by its own rules (Next, Leave)
			if ro.Leave == nil {
				continue
			}
			for _, hr := range alive {
				if why := ro.Leave(hr.h); why != "" && hr.status == "" {
					hr.status, hr.phase, hr.reason = StatusSkipped, p.Name(), why
					hr.phases = append(hr.phases, PhaseResult{Phase: ro.Name, Status: StatusSkipped, Reason: why})
				}
			}
		}
		for _, hr := range wave {
			switch hr.status {
			case StatusFailed:
				failed++
				done = append(done, Outcome{Host: hr.h, Err: hr.err})
			case "":
				ok++
				done = append(done, Outcome{Host: hr.h})
			case StatusSkipped:
				if hr.reason == "cancelled" {
					skipped++
					continue
				}
				skipped++
				done = append(done, Outcome{Host: hr.h, Left: hr.reason})
			}
		}
	}
	if ctx.Err() != nil {
		stop = "cancelled"
	}
	if stop == "" {
		stop = "not part of the rollout"
	}
	for _, hr := range pending {
		skip(hr, stop)
	}
	st.emit(event.Event{Type: event.PhaseDone, Phase: ro.Name, Done: ok, Failed: failed, Skipped: skipped,
		Total: len(healthy), DurationMS: event.Millis(st.now().Sub(start))})
	return failed
}
