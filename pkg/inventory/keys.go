package inventory

import (
	"strings"

	"github.com/gpukit/gpukit/manifests"
)

// SigningKey returns the key a host is to trust for package repository
// repo (manifests.Repo*) under package manager pm (apt, dnf): the bill of
// materials', with the site's fingerprints in place of upstream's when the
// repository's mirror is re-signed.
func (m Mirrors) SigningKey(repo, pm string) manifests.SigningKey {
	k, ok := manifests.Bill().SigningKey(repo, pm)
	if !ok {
		panic("inventory: the bill of materials pins no key for " + repo + " (" + pm + ")")
	}
	var site []string
	switch repo {
	case manifests.RepoCUDA, manifests.RepoContainerToolkit:
		site = m.SigningKeys.NVIDIA
	case manifests.RepoKubernetes:
		site = m.SigningKeys.Kubernetes
	case manifests.RepoDocker:
		site = m.SigningKeys.Docker
	}
	if len(site) > 0 {
		k.Fingerprints = make([]string, len(site))
		for i, f := range site {
			k.Fingerprints[i] = NormalizeFingerprint(f)
		}
	}
	return k
}

// NormalizeFingerprint writes a fingerprint as the bill of materials does:
// upper case, without the spaces gpg shows.
func NormalizeFingerprint(f string) string {
	return strings.ToUpper(strings.ReplaceAll(f, " ", ""))
}
