package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}
	for _, tc := range []struct {
		name                              string
		version, commit, date             string
		bi                                *debug.BuildInfo
		wantVersion, wantCommit, wantDate string
	}{
		{name: "linker sets everything", version: "v1.2.0", commit: "deadbeef", date: "2026-05-01T00:00:00Z",
			bi:          &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs},
			wantVersion: "v1.2.0", wantCommit: "deadbeef", wantDate: "2026-05-01T00:00:00Z"},
		{name: "go install module@version", version: unset,
			bi:          &debug.BuildInfo{Main: debug.Module{Path: "github.com/gpukit/gpukit", Version: "v1.3.0"}},
			wantVersion: "v1.3.0", wantCommit: "unknown"},
		{name: "go build in a checkout: pseudo-version and VCS stamp", version: unset,
			bi:          &debug.BuildInfo{Main: debug.Module{Version: "v1.3.1-0.20260102030405-abc123000000+dirty"}, Settings: vcs},
			wantVersion: "v1.3.1-0.20260102030405-abc123000000+dirty", wantCommit: "abc123", wantDate: "2026-01-02T03:04:05Z"},
		{name: "(devel) is not a version", version: unset,
			bi:          &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			wantVersion: unset, wantCommit: "abc123", wantDate: "2026-01-02T03:04:05Z"},
		{name: "empty module version", version: unset, bi: &debug.BuildInfo{},
			wantVersion: unset, wantCommit: "unknown"},
		{name: "no build info", version: unset, wantVersion: unset, wantCommit: "unknown"},
		{name: "linker version wins over the module version", version: "v2.0.0-rc.1",
			bi:          &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0"}},
			wantVersion: "v2.0.0-rc.1", wantCommit: "unknown"},
		{name: "linker date kept when the commit comes from VCS", version: unset, date: "2026-07-07T00:00:00Z",
			bi:          &debug.BuildInfo{Settings: vcs},
			wantVersion: unset, wantCommit: "abc123", wantDate: "2026-07-07T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := fromBuild(tc.version, tc.commit, tc.date, tc.bi)
			if got.Version != tc.wantVersion || got.Commit != tc.wantCommit || got.Date != tc.wantDate {
				t.Errorf("got version %q commit %q date %q, want %q %q %q",
					got.Version, got.Commit, got.Date, tc.wantVersion, tc.wantCommit, tc.wantDate)
			}
			if got.GoVersion == "" || got.Platform == "" {
				t.Errorf("GoVersion %q, Platform %q: want both set", got.GoVersion, got.Platform)
			}
		})
	}
}
