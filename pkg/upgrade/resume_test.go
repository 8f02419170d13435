package upgrade

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	target := Target{Driver: "590.48.01", CUDA: "13.1"}
	write := func(t *testing.T, nodes map[string]string, finished bool) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "gpu-lab.driver.json")
		st := NewState(path, "gpu-lab", "cluster.yaml", target, start)
		for n, status := range nodes {
			if err := st.Set(n, status, "", start); err != nil {
				t.Fatal(err)
			}
		}
		if finished {
			if err := st.Finish(start.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Save(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name     string
		nodes    map[string]string // nil: no state file
		finished bool
		resume   bool
		want     Target
		// wantState: the rollout is resumed; got: the versions the run installs
		wantState bool
		got       Target
		err       string
		field     string
	}{
		{name: "no state: a new rollout", want: Target{Driver: "595"}, got: Target{Driver: "595"}},
		{name: "no state to resume", resume: true, err: "no rollout to resume"},
		{name: "a finished rollout is replaced", nodes: map[string]string{"gpu-1": Done}, finished: true, want: Target{Driver: "595"}, got: Target{Driver: "595"}},
		{name: "a rollout that took no node holds nothing back", nodes: map[string]string{}, want: Target{Driver: "595"}, got: Target{Driver: "595"}},
		{name: "an unfinished rollout is not replaced", nodes: map[string]string{"gpu-1": InProgress, "gpu-2": Done}, want: Target{Driver: "595"},
			err: "a rollout to driver 590.48.01 started 2026-12-01T10:00:00Z is unfinished (in-progress: gpu-1; done: gpu-2): --resume to go on"},
		{name: "resume takes the rollout's versions", nodes: map[string]string{"gpu-1": Failed}, resume: true, wantState: true, got: target},
		{name: "resume with the same versions", nodes: map[string]string{"gpu-1": Failed}, resume: true, want: Target{Driver: "590.48.01"}, wantState: true, got: target},
		{name: "resume with another driver", nodes: map[string]string{"gpu-1": Failed}, resume: true, want: Target{Driver: "595"},
			err: `installs driver "590.48.01", not "595"`, field: "driver"},
		{name: "resume with another CUDA", nodes: map[string]string{"gpu-1": Failed}, resume: true, want: Target{CUDA: "13.0"},
			err: `installs cuda "13.1", not "13.0"`, field: "cuda"},
		{name: "nothing to resume once finished", nodes: map[string]string{"gpu-1": Done}, finished: true, resume: true, err: "finished 2026-12-01T11:00:00Z; nothing to resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "none.json")
			if tc.nodes != nil {
				path = write(t, tc.nodes, tc.finished)
			}
			before, _ := os.ReadFile(path)
			st, got, err := Decide(path, tc.resume, tc.want)
			after, _ := os.ReadFile(path)
			if string(before) != string(after) {
				t.Error("Decide changed the state file")
			}
			if tc.err != "" {
				var re *ResumeError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &re) || re.Field != tc.field {
					t.Fatalf("err = %v (field %q), want %q (field %q)", err, fieldOf(err), tc.err, tc.field)
				}
				return
			}
			if err != nil || (st != nil) != tc.wantState || got != tc.got {
				t.Fatalf("Decide = %v, %+v, %v; want a state %v and %+v", st != nil, got, err, tc.wantState, tc.got)
			}
		})
	}
}

func fieldOf(err error) string {
	var re *ResumeError
	if errors.As(err, &re) {
		return re.Field
	}
	return ""
}
