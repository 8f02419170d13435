package engine

import (
	"context"
	"sync"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
)

// HostLocal is a Phase whose Run on a host needs nothing from the other
// hosts: only what that host's own earlier phases did. Consecutive
// host-local phases run as one pipeline: each host goes on to the next one
// as soon as it finished the last, instead of waiting for the slowest host
// of the fleet at every phase. Connecting is host-local, so a host whose
// connection is up probes while others are still in their handshake.
//
// A phase that compares hosts or picks some (Preparer, Targeter) or a
// rollout is never pipelined, whatever it says. A RunStopper may end a
// pipeline: no later phase starts before every host finished it.
type HostLocal interface {
	HostLocal() bool
}

// pipelined says whether p may run in a pipeline.
func pipelined(p Phase) bool {
	if _, ok := asRollout(p); ok {
		return false
	}
	if s, ok := p.(Scoped); ok {
		p = s.Phase
	}
	l, ok := p.(HostLocal)
	if !ok || !l.HostLocal() {
		return false
	}
	_, prepares := p.(Preparer)
	_, targets := p.(Targeter)
	return !prepares && !targets
}

// hostLocalRun is how many phases from phases[from] form one pipeline.
func hostLocalRun(phases []Phase, from int) int {
	n := 0
	for _, p := range phases[from:] {
		if !pipelined(p) {
			break
		}
		n++
		if stopsRun(p) {
			break
		}
	}
	return n
}

// stage is one phase of a pipeline.
type stage struct {
	name, title string
	// hosts are the phase's targets, in inventory order.
	hosts []*hostRun
	// before runs once, after the phase's PhaseStart and before any host
	// (a Preparer's Prepare); only the first stage may have one.
	before func()
	work   hostWork
}

// stageStat is what the pipeline counts of one stage.
type stageStat struct {
	started             bool
	start               time.Time
	pending             int // targets that may still reach it
	ok, failed, skipped int
}

// pipeline runs stages over their hosts with bounded concurrency: each host
// works through the stages it is a target of, in order, and stops at its
// first failure. Every stage is bracketed in PhaseStart/PhaseDone, in stage
// order: the first opens when the pipeline starts (with its exact host
// count), a later one when its first host gets there (Total: its targets not
// yet dropped out, an upper bound), and each closes when the last of its
// hosts left it (Total: the hosts that reached it). It returns the number of
// hosts that failed each stage.
func (r *Runner) pipeline(ctx context.Context, st *runState, limit int, stages []stage) []int {
	// Hosts that are a target of some stage, in first-appearance order (the
	// stages' lists are in inventory order), and the stages of each.
	var hosts []*hostRun
	member := map[*hostRun][]int{}
	for k, s := range stages {
		for _, hr := range s.hosts {
			if _, ok := member[hr]; !ok {
				hosts = append(hosts, hr)
			}
			member[hr] = append(member[hr], k)
		}
	}
	p := &pipe{st: st, stages: stages, stats: make([]stageStat, len(stages)), alive: len(hosts)}
	for k, s := range stages {
		p.stats[k].pending = len(s.hosts)
	}
	p.open(0)
	if stages[0].before != nil {
		stages[0].before()
	}
	p.settle() // a first stage without targets closes now, before any later one opens
	n := forEach(ctx, limit, len(hosts), func(i int) {
		hr := hosts[i]
		ks := member[hr]
		for j, k := range ks {
			s := &stages[k]
			if ctx.Err() != nil { // between two phases: like a run stopped before the next one
				hr.status, hr.phase, hr.reason = StatusSkipped, s.name, "cancelled"
				p.drop(ks[j:])
				return
			}
			p.open(k)
			hr.h.phase = s.name
			began := st.now()
			hr.h.emit(event.Event{Type: event.HostStart})
			skipped, err := safely(hr, s.work)
			r.record(ctx, st, hr, s.name, began, skipped, err)
			_ = hr.h.log.close()
			p.left(k, hr, ks[j+1:])
			if hr.status != "" { // failed, or cancelled: out of the run
				return
			}
		}
	})
	for _, hr := range hosts[n:] { // never started: the run was cancelled
		ks := member[hr]
		name := stages[ks[0]].name
		hr.status, hr.phase, hr.reason = StatusSkipped, name, "cancelled"
		hr.phases = append(hr.phases, PhaseResult{Phase: name, Status: StatusSkipped, Reason: "cancelled"})
		p.left(ks[0], hr, ks[1:])
	}
	p.settle() // stages without targets after the last host
	failed := make([]int, len(stages))
	for k := range p.stats {
		failed[k] = p.stats[k].failed
	}
	return failed
}

// pipe is the shared state of one pipeline.
type pipe struct {
	st     *runState
	stages []stage

	mu    sync.Mutex
	stats []stageStat
	next  int // the first stage not yet closed
	alive int // hosts not (yet) out of the pipeline
}

// open emits stage k's PhaseStart the first time a host gets there.
func (p *pipe) open(k int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openLocked(k)
}

func (p *pipe) openLocked(k int) {
	s := &p.stats[k]
	if s.started {
		return
	}
	s.started, s.start = true, p.st.now()
	p.st.emit(event.Event{Type: event.PhaseStart, Phase: p.stages[k].name, Title: p.stages[k].title,
		Total: s.pending + s.ok + s.failed + s.skipped})
}

// left counts hr's outcome of stage k (its last PhaseResult); when that put
// hr out of the run, it will not reach the stages later.
func (p *pipe) left(k int, hr *hostRun, later []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.stats[k]
	switch hr.phases[len(hr.phases)-1].Status {
	case StatusOK:
		s.ok++
	case StatusFailed:
		s.failed++
	default:
		s.skipped++
	}
	s.pending--
	if hr.status != "" {
		p.dropLocked(later)
	}
	p.closeDone()
}

// drop takes a host out before it reached the stages ks.
func (p *pipe) drop(ks []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(ks)
	p.closeDone()
}

// settle closes the stages no host can reach any more.
func (p *pipe) settle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeDone()
}

func (p *pipe) dropLocked(ks []int) {
	p.alive--
	for _, k := range ks {
		p.stats[k].pending--
	}
}

// closeDone emits PhaseDone for every stage, in order, that no host can
// still reach. A stage no host reached says nothing when no host is left
// (as a phase after everyone failed never starts); one that had no targets
// at all opens and closes on zero hosts, as a phase does.
func (p *pipe) closeDone() {
	for p.next < len(p.stages) && p.stats[p.next].pending == 0 {
		k := p.next
		p.next++
		s := &p.stats[k]
		reached := s.ok + s.failed + s.skipped
		if !s.started {
			if reached == 0 && p.alive == 0 {
				continue
			}
			p.openLocked(k)
		}
		p.st.emit(event.Event{Type: event.PhaseDone, Phase: p.stages[k].name, Done: s.ok, Failed: s.failed,
			Skipped: s.skipped, Total: reached, DurationMS: event.Millis(p.st.now().Sub(s.start))})
	}
}
