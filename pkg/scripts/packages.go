package scripts

import (
	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/osfamily"
)

// PackageSet is packages a host installs from one source, as the
// installers' scripts name them: what `gpukit bundle` gathers for a site
// whose hosts cannot reach that source. Each layer that renders an install
// script says which sets it installs, next to the parameters it renders
// them with, so that a bundle and a run cannot name different packages.
type PackageSet struct {
	Family osfamily.Info
	// Repo is the repository's base URL as the host's sources name it
	// (ending in "/"); "" is the distribution's own sources.
	Repo string
	// Mirror is the inventory's mirror that replaces Repo's server
	// (spec.mirrors: nvidia, kubernetes, docker), Path where Repo lies
	// below it, and KeyPath where its signing key does: a mirror, and a
	// bundle, lay repositories out the same way.
	Mirror, Path, KeyPath string
	// Suite and Components are the apt suite and components under Repo
	// ("" and none: a flat repository, `deb URL /`).
	Suite      string
	Components []string
	// Key is the repository's signing key (none for the distribution's),
	// at KeyURL: where the install scripts fetch it (base URL + Key.File).
	Key    manifests.SigningKey
	KeyURL string
	// Names are installed at Version (an upstream version: the package's
	// own adds a revision, 1.37.2-1.1), or at their newest where Version is "".
	Names   []string
	Version string
	// For says what needs them, for the operator reading the list.
	For string
}
