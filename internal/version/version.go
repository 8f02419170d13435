// Package version holds the build identity, set by the linker
// (-X github.com/gpukit/gpukit/internal/version.Version=...).
package version

import (
	"runtime"
	"runtime/debug"
)

// Set at link time by the Makefile and goreleaser; the defaults describe a
// plain `go build`.
var (
	Version = "dev"
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

// Get returns the build identity; when the linker set no commit, the VCS
// stamp that `go build` records is used instead.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info.Commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
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
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}
