package lab

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An image built here and pushed to the lab's registry is pulled and run
// by containerd (Debian's, through the lab's package proxy) in a --kube
// host: the registry serves the bridge, and a Kubernetes host's containerd
// works on its own disk.
func TestRegistryServesContainerd(t *testing.T) {
	t.Parallel()
	l := Start(t, Options{Hosts: 1, Kube: true})
	reg := l.Registry(t)
	if reg != l.Bridge+":5000" {
		t.Fatalf("registry at %q", reg)
	}
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from the lab registry\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "hello"), src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	digest := l.PushImage(t, "gpukit-lab/hello:1", dir, "/hello")
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("push: %q", digest)
	}
	if again := l.PushImage(t, "gpukit-lab/hello:1", dir, "/hello"); again != digest {
		t.Errorf("the same directory pushed twice: %s, then %s (not reproducible)", digest, again)
	}
	l.UseDebianMirror(t, "lab-1")
	got := l.SSH(t, "lab-1", `set -e
apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends containerd >/dev/null 2>&1
systemctl is-active -q containerd || systemctl start containerd
ctr -n gpukit images pull --plain-http `+reg+`/gpukit-lab/hello:1 >/dev/null
ctr -n gpukit images ls -q | grep -c gpukit-lab/hello
ctr -n gpukit run --rm `+reg+`/gpukit-lab/hello:1 hello-1`)
	if got != "1\nhello from the lab registry" {
		t.Errorf("containerd in lab-1: %q", got)
	}
	// The same image from the TLS twin: only with its CA, only with the login.
	sec := l.SecureRegistry(t)
	pem, err := os.ReadFile(sec.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	get := func(roots *x509.CertPool, user, password string) (int, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Proxy: nil}}
		req, _ := http.NewRequest("GET", "https://"+sec.Address+"/v2/gpukit-lab/hello/manifests/1", nil)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var unknown x509.UnknownAuthorityError
	if _, err := get(nil, sec.Username, sec.Password); !errors.As(err, &unknown) {
		t.Errorf("without its CA: %v, want an unknown authority", err)
	}
	if code, err := get(pool, "", ""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("without the login: %d %v, want 401", code, err)
	}
	if code, err := get(pool, sec.Username, sec.Password); err != nil || code != http.StatusOK {
		t.Errorf("with CA and login: %d %v, want 200", code, err)
	}
}
