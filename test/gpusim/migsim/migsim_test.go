package migsim_test

import (
	"path/filepath"
	"testing"

	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim/migsim"
)

// The simulated placements on the real H100 profile table, checked against
// the placements published A100 sessions show for the same shapes (an A100
// 40GB and an H100 80GB share NVIDIA's placement table): 4g then 2g then
// 1g take slices 0, 4 and 6, and -lgip's Free counts down as it did there
// (1g: 3, 1, 0); 3g first goes to slice 4, and a 2g after it to 0.
func TestPlacementsLikeRealSessions(t *testing.T) {
	m, ok, err := migsim.Load(filepath.Join(fixtures.Dir(t, "nvidia-smi"), "h100-80gb-hbm3__mig-lgip.txt"))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	p := func(name string) migsim.Profile {
		x, ok := m.Profile(name)
		if !ok {
			t.Fatalf("no profile %s", name)
		}
		return x
	}
	g := &migsim.GPU{Mode: "Enabled"}
	for _, step := range []struct {
		profile          string
		start, free1g    int
		free1g20, free2g int
	}{
		{"4g.40gb", 0, 3, 2, 1},
		{"2g.20gb", 4, 1, 1, 0},
		{"1g.10gb", 6, 0, 0, 0},
	} {
		in, err := g.Create(m, p(step.profile), true)
		if err != nil || in.Start != step.start {
			t.Fatalf("%s at %d (%v), want %d", step.profile, in.Start, err, step.start)
		}
		if f := [3]int{g.Free(m, p("1g.10gb")), g.Free(m, p("1g.20gb")), g.Free(m, p("2g.20gb"))}; f != [3]int{step.free1g, step.free1g20, step.free2g} {
			t.Errorf("after %s: Free 1g.10gb, 1g.20gb, 2g.20gb = %v, want %v", step.profile, f, [3]int{step.free1g, step.free1g20, step.free2g})
		}
	}
	g = &migsim.GPU{Mode: "Enabled"}
	for _, want := range []struct {
		profile string
		start   int
	}{{"3g.40gb", 4}, {"2g.20gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 3}} {
		if in, err := g.Create(m, p(want.profile), true); err != nil || in.Start != want.start {
			t.Errorf("%s at %d (%v), want %d", want.profile, in.Start, err, want.start)
		}
	}
	if _, err := g.Create(m, p("1g.10gb"), true); err == nil {
		t.Error("an eighth compute slice")
	}
	if _, err := (&migsim.GPU{Mode: "Disabled"}).Create(m, p("1g.10gb"), true); err == nil {
		t.Error("an instance with MIG off")
	}
}
