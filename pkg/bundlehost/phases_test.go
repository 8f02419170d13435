package bundlehost_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/bundlehost"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// fakeBundle is a complete bundle of one package file, with its CA.
func fakeBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"packages/os/debian-12/Packages": "", "key/bundle.asc": "-----BEGIN PGP PUBLIC KEY BLOCK-----\nx\n-----END PGP PUBLIC KEY BLOCK-----\n",
		bundlefs.ManifestFile: `{"apiVersion": "gpukit.dev/v1alpha1", "kind": "Bundle", "complete": true, "fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
  "files": [{"path": "packages/os/debian-12/Packages", "size": 0, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}]}`,
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := bundlehost.EnsureCA(dir, "t"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The bundle host alone serves; every Debian host gets the source. A dry-run
// plans the uploads and makes no certificate; a host that serves the bundle
// as wanted is left alone.
func TestServe(t *testing.T) {
	dir := fakeBundle(t)
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  bundle: {dir: " + dir + ", host: cp-1}\n  hosts:\n" +
		"    - {name: cp-1, address: 10.0.0.10, roles: [control-plane]}\n    - {name: gpu-1, address: 10.0.0.11, roles: [worker]}\n"
	inv, err := inventory.Parse("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable() // a Linux executable for the host's architecture, as gpukit's is
	if err != nil {
		t.Fatal(err)
	}
	// what the bundle host's state script prints: nothing served yet
	served := "manifest=none\nbinary=none\ncert=none\nkey=none\nunit=none\nactive=no\n"
	held := "" // the manifest the host holds
	fleet := &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		switch cmd.Name {
		case "probe facts":
			return ssh.Result{Stdout: []byte("os.id=debian\nos.version=12\narch=x86_64\n")}, nil
		case "read the bundle the host serves":
			if strings.Contains(cmd.Script, "--- manifest") {
				return ssh.Result{Stdout: []byte(served + "--- manifest\n" + held)}, nil
			}
			return ssh.Result{Stdout: []byte(served)}, nil
		case "read the bundle's package source":
			return ssh.Result{Stdout: []byte("pending: the bundle's source\n")}, nil
		}
		return ssh.Result{}, nil
	}}
	l := bundlehost.New(inv, self)
	run := func(dryRun bool) *engine.Summary {
		r := &engine.Runner{Name: "test", Phases: []engine.Phase{l.Serve(), l.Sources()}, Sink: &enginetest.Recorder{}, DryRun: dryRun}
		sum, err := r.Run(context.Background(), inv.Machines, fleet.Dial)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	names := func(host string) string { return strings.Join(fleet.Executor(host).Names(), ", ") }

	run(true)
	// one read of what the host serves: Run takes ShouldRun's
	if got := names("cp-1"); got != "probe facts, read the bundle the host serves, read the bundle's package source" {
		t.Errorf("dry-run on the bundle host ran %q", got)
	}
	if got := names("gpu-1"); got != "probe facts, read the bundle's package source" {
		t.Errorf("dry-run on gpu-1 ran %q", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, bundlefs.PrivateDir, "registry-10.0.0.10*")); len(m) != 0 {
		t.Errorf("a dry-run made %v", m)
	}

	run(false)
	ups := fleet.Executor("cp-1").Uploads()
	var paths []string
	for _, u := range ups {
		paths = append(paths, u.Path)
	}
	if got := strings.Join(paths, " "); got != "/var/lib/gpukit/bundle.incoming.tar /usr/local/lib/gpukit/gpukit /etc/gpukit/bundle/registry.pem /etc/gpukit/bundle/registry-key.pem /etc/systemd/system/gpukit-bundle.service" {
		t.Errorf("uploads to the bundle host: %s", got)
	}
	// The files the host lacks, the manifest last.
	tr := tar.NewReader(bytes.NewReader(ups[0].Content))
	var files []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		files = append(files, h.Name)
	}
	if got := strings.Join(files, " "); got != "packages/os/debian-12/Packages bundle.json" {
		t.Errorf("the tar holds %s", got)
	}
	if got := names("gpu-1"); !strings.HasSuffix(got, "point apt at the bundle") || strings.Contains(got, "serve") {
		t.Errorf("gpu-1 ran %q", got)
	}
	if sources := scriptOf(fleet, "gpu-1", "point apt at the bundle"); !strings.Contains(sources, "http://10.0.0.10:8480/packages/os/debian-12/ ./") {
		t.Errorf("gpu-1's source:\n%s", sources)
	}

	// A host that holds an older bundle with the same package file: its
	// manifest is read once, and only the new manifest goes.
	served = "manifest=older\nbinary=none\ncert=none\nkey=none\nunit=none\nactive=yes\n"
	held = `{"kind": "Bundle", "files": [{"path": "packages/os/debian-12/Packages", "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}]}`
	run(false)
	if got := names("cp-1"); got != "probe facts, read the bundle the host serves, read the bundle the host serves, serve the bundle, read the bundle's package source, point apt at the bundle" {
		t.Errorf("an older bundle on the host: %q", got)
	}
	tr = tar.NewReader(bytes.NewReader(fleet.Executor("cp-1").Uploads()[0].Content))
	if h, err := tr.Next(); err != nil || h.Name != "bundle.json" {
		t.Errorf("the upload to a host with the files: %v %v", h, err)
	} else if _, err := tr.Next(); err != io.EOF {
		t.Errorf("the upload holds more than the manifest: %v", err)
	}
}

// add-node points its new hosts at a bundle served already: no gpukit
// executable needed.
func TestSourcesAlone(t *testing.T) {
	dir := fakeBundle(t)
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  bundle: {dir: " + dir + ", host: cp-1}\n  hosts:\n" +
		"    - {name: cp-1, address: 10.0.0.10, roles: [control-plane]}\n    - {name: gpu-1, address: 10.0.0.11, roles: [worker]}\n"
	inv, err := inventory.Parse("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	fleet := &enginetest.Fleet{Handler: func(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		switch cmd.Name {
		case "probe facts":
			return ssh.Result{Stdout: []byte("os.id=ubuntu\nos.version=24.04\narch=x86_64\n")}, nil
		case "read the bundle's package source":
			return ssh.Result{Stdout: []byte("pending: the bundle's key\n")}, nil
		}
		return ssh.Result{}, nil
	}}
	r := &engine.Runner{Name: "test", Phases: []engine.Phase{engine.Scoped{Phase: bundlehost.New(inv, "").Sources(), Hosts: []string{"gpu-1"}}}, Sink: &enginetest.Recorder{}}
	sum, err := r.Run(context.Background(), inv.Machines[1:], fleet.Dial)
	if err != nil || sum.HostCounts().Changed != 1 {
		t.Fatalf("%v %+v", err, sum.HostCounts())
	}
	if script := scriptOf(fleet, "gpu-1", "point apt at the bundle"); !strings.Contains(script, "http://10.0.0.10:8480/packages/os/ubuntu-24.04/ ./") {
		t.Errorf("gpu-1's source:\n%s", script)
	}
}

// scriptOf is the script of the last command called name that host ran.
func scriptOf(fleet *enginetest.Fleet, host, name string) string {
	var script string
	for _, c := range fleet.Executor(host).Commands() {
		if c.Name == name {
			script = c.Script
		}
	}
	return script
}
