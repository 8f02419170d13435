// Package imageref names container images in full and under a site's
// registry mirror: what the bundle lists, what containerd's hosts.toml
// files point at, and what a swarm service runs where Docker can mirror
// only Docker Hub.
package imageref

import (
	"fmt"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Normal is ref in full (docker.io/library/busybox:latest for busybox),
// false when it is not a reference (an empty or templated value).
func Normal(ref string) (string, bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.ContainsAny(ref, " ${}") {
		return "", false
	}
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return "", false
	}
	// Docker Hub as people and containerd's mirror configuration name it
	// (go-containerregistry says index.docker.io).
	full := r.Context().RepositoryStr()
	if reg := r.Context().RegistryStr(); reg == name.DefaultRegistry {
		full = "docker.io/" + full
	} else {
		full = reg + "/" + full
	}
	switch t := r.(type) {
	case name.Tag:
		full += ":" + t.TagStr()
	case name.Digest:
		// a reference with both keeps its tag for the reader: tag@digest
		if tag, _, ok := strings.Cut(ref, "@"); ok && strings.LastIndex(tag, ":") > strings.LastIndex(tag, "/") {
			full += ":" + tag[strings.LastIndex(tag, ":")+1:]
		}
		full += "@" + t.DigestStr()
	}
	return full, true
}

// Mirror is spec.mirrors.registry taken apart, with how clients trust and
// log in to it.
type Mirror struct {
	Scheme string // https, or http for a plain-HTTP mirror
	Host   string // host[:port]
	Path   string // "" or a path without slashes at either end
	// CA is the PEM of the CA that signed the mirror's certificate
	// (spec.mirrors.registryCAFile), or nil.
	CA []byte
	// Authorization is the login's header value ("Basic ..."), or "".
	Authorization string
}

// ParseMirror reads [http://]host[:port][/path] (validated by the inventory).
func ParseMirror(s string) Mirror {
	m := Mirror{Scheme: "https"}
	if rest, ok := strings.CutPrefix(s, "http://"); ok {
		m.Scheme, s = "http", rest
	}
	m.Host, m.Path, _ = strings.Cut(s, "/")
	m.Path = strings.Trim(m.Path, "/")
	return m
}

// Ref is the mirror's name of an image of registry: host[:port]/path/registry/repo.
func (m Mirror) Ref(registry, repo string) string {
	return path.Join(m.Host, m.Path, registry, repo)
}

// Of is the mirror's name of the image ref (any form Normal reads):
// host[:port]/path/<registry>/<repository>[:tag][@digest], where the
// mirror keeps each registry's images.
func (m Mirror) Of(ref string) (string, error) {
	full, ok := Normal(ref)
	if !ok {
		return "", fmt.Errorf("%q is not an image reference", ref)
	}
	registry, repo, _ := strings.Cut(full, "/")
	return m.Ref(registry, repo), nil
}
