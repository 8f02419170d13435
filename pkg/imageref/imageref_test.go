package imageref

import "testing"

func TestMirrorOf(t *testing.T) {
	for _, c := range []struct{ mirror, ref, want string }{
		{"http://10.251.0.1:5000/mirror", "docker.io/traefik:v3.7.11", "10.251.0.1:5000/mirror/docker.io/library/traefik:v3.7.11"},
		{"http://10.251.0.1:5000/mirror", "traefik:v3.7.11", "10.251.0.1:5000/mirror/docker.io/library/traefik:v3.7.11"},
		{"registry.site:8443", "quay.io/prometheus/prometheus:v3.16.0", "registry.site:8443/quay.io/prometheus/prometheus:v3.16.0"},
		{"registry.site/a/b", "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.2-4.8.1-distroless", "registry.site/a/b/nvcr.io/nvidia/k8s/dcgm-exporter:4.5.2-4.8.1-distroless"},
		{"registry.site", "prom/statsd-exporter@sha256:" + sha, "registry.site/docker.io/prom/statsd-exporter@sha256:" + sha},
		{"registry.site", "ghcr.io/x/y:1.0@sha256:" + sha, "registry.site/ghcr.io/x/y:1.0@sha256:" + sha},
	} {
		got, err := ParseMirror(c.mirror).Of(c.ref)
		if err != nil || got != c.want {
			t.Errorf("%s: Of(%s) = %q, %v; want %q", c.mirror, c.ref, got, err, c.want)
		}
	}
	if _, err := ParseMirror("registry.site").Of("${IMAGE}"); err == nil {
		t.Error("a templated value is taken for an image")
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
