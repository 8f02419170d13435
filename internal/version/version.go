// Package version holds the build identity, set by the linker
// (-X github.com/gpukit/gpukit/internal/version.Version=...).
package version

import (
	"runtime"
	"runtime/debug"
)

// unset is Version when the linker set none.
const unset = "dev"

// Set at link time by the Makefile and goreleaser; the defaults describe a
// plain `go build` or `go install`.
var (
	Version = unset
	Commit  = ""
	Date    = ""
)

// Info is the build identity as printed by `gpukit version`.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build identity: what the linker set, else what the go
// command recorded in the binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(Version, Commit, Date, bi)
}

// fromBuild fills in what the linker left unset from the build info (nil
// when the binary has none): `go install ...@v1.2.3` sets no -X flags but
// records the module version, and `go build` in a checkout records the VCS
// revision and time.
func fromBuild(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		bi = &debug.BuildInfo{}
	}
	// "(devel)" is the go command's word for "built from a checkout, no
	// version known": no better than the default.
	if info.Version == unset && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if info.Commit == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			}
		}
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}
