package inventory

import (
	"slices"
	"testing"

	"github.com/gpukit/gpukit/manifests"
)

func TestMirrorSigningKey(t *testing.T) {
	site := "5A3C0F1E77B29D448E61C0A93B7D2E5F9911AB02"
	m := Mirrors{
		NVIDIA: "https://mirror.example.com/nvidia", Kubernetes: "https://mirror.example.com/k8s",
		SigningKeys: MirrorKeys{NVIDIA: []string{"5a3c 0f1e 77b2 9d44 8e61  c0a9 3b7d 2e5f 9911 ab02"}},
	}
	for _, tc := range []struct {
		repo, pm, file string
		want           []string
	}{
		{manifests.RepoCUDA, "apt", "3bf863cc.pub", []string{site}},                                            // re-signed mirror: the site's key only
		{manifests.RepoContainerToolkit, "apt", "gpgkey", []string{site}},                                      // one mirror, one key
		{manifests.RepoKubernetes, "apt", "Release.key", []string{"DE15B14486CD377B9E876E1A234654DA9A296436"}}, // a copy: upstream's key
		{manifests.RepoDocker, "dnf", "gpg", []string{"060A61C51B558A7F742B77AAC52FEB6B621E9F35"}},
	} {
		k := m.SigningKey(tc.repo, tc.pm)
		if k.File != tc.file || !slices.Equal(k.Fingerprints, tc.want) {
			t.Errorf("SigningKey(%s, %s) = %+v; want file %s, fingerprints %v", tc.repo, tc.pm, k, tc.file, tc.want)
		}
		if err := manifests.CheckSigningKey(k); err != nil {
			t.Error(err)
		}
	}
}
