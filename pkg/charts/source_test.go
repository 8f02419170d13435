package charts

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/download"
	"github.com/gpukit/gpukit/test/fixtures"
)

// testChart is a small chart: one ConfigMap whose data are .Values.data,
// default values data.greeting=hello.
func testChart(name, version string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, Type: "application"},
		Templates: []*chart.File{{Name: "templates/configmap.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
data:
{{- range $k, $v := .Values.data }}
  {{ $k }}: {{ $v | quote }}
{{- end }}
`)}},
		Values: map[string]any{"data": map[string]any{"greeting": "hello"}},
	}
}

// saveChart writes ch into dir as `helm package` names it, NAME-VERSION.tgz,
// renamed to as when as is not "".
func saveChart(t *testing.T, ch *chart.Chart, dir, as string) string {
	t.Helper()
	p, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	if as == "" {
		return p
	}
	if err := os.Rename(p, filepath.Join(dir, as)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, as)
}

// A local directory of archives, named by an absolute path or a file://
// URL, as an air-gapped site keeps them: NAME-VERSION.tgz (the version with
// or without its v), or an unpacked NAME directory; the chart found must be
// the one asked for.
func TestLoadFromDirectory(t *testing.T) {
	dir := t.TempDir()
	saveChart(t, testChart("web", "1.0.0"), dir, "")
	saveChart(t, testChart("web", "1.1.0"), dir, "")
	saveChart(t, testChart("flannel", "v0.28.9"), dir, "") // flannel-v0.28.9.tgz, as flannel publishes it
	saveChart(t, testChart("plain", "3.1.0"), dir, "")
	saveChart(t, testChart("impostor", "1.1.0"), dir, "impostor-1.0.0.tgz")
	saveChart(t, testChart("other", "1.0.0"), dir, "renamed-1.0.0.tgz")
	if err := chartutil.SaveDir(testChart("unpacked", "0.5.0"), dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken-1.0.0.tgz"), []byte("not a gzip archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		chart         Chart
		wantVersion   string // the loaded chart's own version
		wantErr       string
		wantErrSuffix string
	}{
		{name: "NAME-VERSION.tgz", chart: Chart{Name: "web", Version: "1.0.0"}, wantVersion: "1.0.0"},
		{name: "the version asked for among several", chart: Chart{Name: "web", Version: "1.1.0"}, wantVersion: "1.1.0"},
		{name: "a version with its v", chart: Chart{Name: "flannel", Version: "v0.28.9"}, wantVersion: "v0.28.9"},
		{name: "v asked, archive without", chart: Chart{Name: "plain", Version: "v3.1.0"}, wantVersion: "3.1.0"},
		{name: "an unpacked chart directory", chart: Chart{Name: "unpacked", Version: "0.5.0"}, wantVersion: "0.5.0"},
		{name: "missing version", chart: Chart{Name: "web", Version: "2.0.0"},
			wantErr: "chart web 2.0.0: no web-2.0.0.tgz in " + dir},
		{name: "missing chart", chart: Chart{Name: "absent", Version: "1.0.0"},
			wantErr: "chart absent 1.0.0: no absent-1.0.0.tgz in " + dir},
		{name: "an archive holding another version", chart: Chart{Name: "impostor", Version: "1.0.0"},
			wantErr: filepath.Join(dir, "impostor-1.0.0.tgz") + " holds chart impostor 1.1.0, not impostor 1.0.0"},
		{name: "an archive holding another chart", chart: Chart{Name: "renamed", Version: "1.0.0"},
			wantErr: filepath.Join(dir, "renamed-1.0.0.tgz") + " holds chart other 1.0.0, not renamed 1.0.0"},
		{name: "an unpacked directory at another version", chart: Chart{Name: "unpacked", Version: "0.6.0"},
			wantErr: filepath.Join(dir, "unpacked") + " holds chart unpacked 0.5.0, not unpacked 0.6.0"},
		{name: "a broken archive", chart: Chart{Name: "broken", Version: "1.0.0"},
			wantErr: "chart broken 1.0.0: "},
		{name: "the pinned digest", chart: Chart{Name: "web", Version: "1.0.0", SHA256: fileDigest(t, filepath.Join(dir, "web-1.0.0.tgz"))}, wantVersion: "1.0.0"},
		{name: "another archive than the pinned one", chart: Chart{Name: "web", Version: "1.1.0", SHA256: fileDigest(t, filepath.Join(dir, "web-1.0.0.tgz"))},
			wantErr: "chart web 1.1.0: " + filepath.Join(dir, "web-1.1.0.tgz") + ": sha256 "},
		{name: "a directory cannot be checked against a pinned digest", chart: Chart{Name: "unpacked", Version: "0.5.0", SHA256: strings.Repeat("0", 64)},
			wantErr: "chart unpacked 0.5.0: " + filepath.Join(dir, "unpacked") + " is a directory, which its pinned sha256 cannot check"},
	} {
		for form, src := range map[string]Source{"path": Source(dir), "file URL": Source("file://" + dir)} {
			t.Run(tc.name+" ("+form+")", func(t *testing.T) {
				// A repository named by the chart is never asked: the
				// directory alone is the source.
				tc.chart.Repo = "http://127.0.0.1:1/unreachable"
				ch, err := src.Load(context.Background(), tc.chart)
				if tc.wantErr != "" {
					if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
						t.Fatalf("error %v, want one starting %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if ch.Metadata.Name != tc.chart.Name || ch.Metadata.Version != tc.wantVersion || len(ch.Templates) != 1 {
					t.Errorf("loaded %s %s with %d template(s), want %s %s with 1", ch.Metadata.Name, ch.Metadata.Version, len(ch.Templates), tc.chart.Name, tc.wantVersion)
				}
			})
		}
	}
}

// Only an absolute path or a file:// URL names a directory: anything else
// is a repository's URL, so a relative path is not read from the working
// directory (which would differ between a plan and an init run elsewhere).
func TestRelativePathIsNotADirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "charts"), 0o755); err != nil {
		t.Fatal(err)
	}
	saveChart(t, testChart("web", "1.0.0"), filepath.Join(dir, "charts"), "")
	t.Chdir(dir)
	for _, src := range []Source{"charts", "./charts"} {
		_, err := src.Load(context.Background(), Chart{Name: "web", Version: "1.0.0", Repo: "http://127.0.0.1:1/unreachable"})
		if want := "chart web 1.0.0 in " + string(src) + ": " + string(src) + "/index.yaml: only https is fetched"; err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", src, err, want)
		}
	}
}

// repoServer serves dir as a Helm repository under /charts/, its
// index.yaml written by index, and records the paths asked for.
type repoServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newRepoServer(t *testing.T, dir string) *repoServer {
	t.Helper()
	s := &repoServer{}
	files := http.StripPrefix("/charts/", http.FileServer(http.Dir(dir)))
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	// Every httptest TLS server has the same certificate: one transport
	// trusts them all.
	old := download.Transport
	download.Transport = s.Client().Transport
	t.Cleanup(func() { download.Transport = old })
	return s
}

// fileDigest is the sha256 of the file at p, in hex.
func fileDigest(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func (s *repoServer) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// writeIndex writes dir/index.yaml for the archives in dir, their URLs
// under base ("" for URLs relative to the repository).
func writeIndex(t *testing.T, dir, base string) {
	t.Helper()
	idx, err := repo.IndexDirectory(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Helm repository over HTTP: the chart's own (Source "") or a mirror
// holding them all (spec.mirrors.charts), whose index names the archives by
// absolute or relative URLs; a chart or version the index lacks, an archive
// missing behind the index, an index whose archive holds another version and
// a URL that is no repository are errors naming the chart.
func TestLoadFromRepository(t *testing.T) {

	absolute := t.TempDir()
	saveChart(t, testChart("web", "1.0.0"), absolute, "")
	saveChart(t, testChart("web", "1.0.5"), absolute, "")
	saveChart(t, testChart("flannel", "v0.28.9"), absolute, "")
	abs := newRepoServer(t, absolute)
	writeIndex(t, absolute, abs.URL+"/charts")

	relative := t.TempDir()
	saveChart(t, testChart("web", "1.0.0"), relative, "")
	rel := newRepoServer(t, relative)
	writeIndex(t, relative, "")

	// An index that promises web 2.0.0 and 3.0.0: the first archive is
	// missing, the second holds 3.0.1.
	lying := t.TempDir()
	saveChart(t, testChart("web", "2.0.0"), lying, "")
	saveChart(t, testChart("web", "3.0.1"), lying, "web-3.0.0.tgz")
	idx := repo.NewIndexFile()
	lie := newRepoServer(t, lying)
	for _, v := range []string{"2.0.0", "3.0.0"} {
		if err := idx.MustAdd(&chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: v}, "web-"+v+".tgz", lie.URL+"/charts", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.WriteFile(filepath.Join(lying, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(lying, "web-2.0.0.tgz")); err != nil {
		t.Fatal(err)
	}

	// An archive changed behind an index that has its digest.
	tampered := t.TempDir()
	saveChart(t, testChart("web", "1.0.0"), tampered, "")
	tam := newRepoServer(t, tampered)
	writeIndex(t, tampered, tam.URL+"/charts")
	saveChart(t, testChart("web", "1.0.0-tampered"), tampered, "web-1.0.0.tgz")

	unreachable := "https://127.0.0.1:1/charts"
	for _, tc := range []struct {
		name      string
		source    Source
		chart     Chart
		server    *repoServer
		wantAsked []string // the paths the server was asked for
		wantErr   string   // a prefix of the error
		wantIn    string   // and a part of it
	}{
		{name: "the chart's own repository", chart: Chart{Name: "web", Version: "1.0.0", Repo: abs.URL + "/charts"},
			server: abs, wantAsked: []string{"/charts/index.yaml", "/charts/web-1.0.0.tgz"}},
		{name: "a mirror instead of the chart's repository", source: Source(abs.URL + "/charts/"), chart: Chart{Name: "web", Version: "1.0.5", Repo: unreachable},
			server: abs, wantAsked: []string{"/charts/index.yaml", "/charts/web-1.0.5.tgz"}},
		{name: "a version with its v", source: Source(abs.URL + "/charts"), chart: Chart{Name: "flannel", Version: "v0.28.9", Repo: unreachable},
			server: abs, wantAsked: []string{"/charts/index.yaml", "/charts/flannel-v0.28.9.tgz"}},
		{name: "archives named relative to the repository", source: Source(rel.URL + "/charts"), chart: Chart{Name: "web", Version: "1.0.0", Repo: unreachable},
			server: rel, wantAsked: []string{"/charts/index.yaml", "/charts/web-1.0.0.tgz"}},
		{name: "a version the index lacks", source: Source(abs.URL + "/charts"), chart: Chart{Name: "web", Version: "9.9.9"},
			server: abs, wantAsked: []string{"/charts/index.yaml"},
			wantErr: "chart web 9.9.9 in " + abs.URL + "/charts: ", wantIn: `chart "web" version "9.9.9" not found`},
		{name: "a chart the index lacks", source: Source(abs.URL + "/charts"), chart: Chart{Name: "absent", Version: "1.0.0"},
			server: abs, wantAsked: []string{"/charts/index.yaml"},
			wantErr: "chart absent 1.0.0 in " + abs.URL + "/charts: ", wantIn: `chart "absent" version "1.0.0" not found`},
		{name: "a partial version is no pin", source: Source(abs.URL + "/charts"), chart: Chart{Name: "web", Version: "1.0"},
			server: abs, wantAsked: []string{"/charts/index.yaml", "/charts/web-1.0.5.tgz"},
			wantErr: abs.URL + "/charts/web-1.0.5.tgz holds chart web 1.0.5, not web 1.0"},
		{name: "an archive missing behind the index", source: Source(lie.URL + "/charts"), chart: Chart{Name: "web", Version: "2.0.0"},
			server: lie, wantAsked: []string{"/charts/index.yaml", "/charts/web-2.0.0.tgz"},
			wantErr: "chart web 2.0.0: GET " + lie.URL + "/charts/web-2.0.0.tgz: 404 Not Found"},
		{name: "an archive holding another version than its index says", source: Source(lie.URL + "/charts"), chart: Chart{Name: "web", Version: "3.0.0"},
			server: lie, wantAsked: []string{"/charts/index.yaml", "/charts/web-3.0.0.tgz"},
			wantErr: lie.URL + "/charts/web-3.0.0.tgz holds chart web 3.0.1, not web 3.0.0"},
		{name: "no repository there", source: Source(abs.URL + "/nothing"), chart: Chart{Name: "web", Version: "1.0.0"},
			server: abs, wantAsked: []string{"/nothing/index.yaml"},
			wantErr: "chart web 1.0.0 in " + abs.URL + "/nothing: ", wantIn: "404 Not Found"},
		{name: "the pinned digest", chart: Chart{Name: "web", Version: "1.0.0", Repo: abs.URL + "/charts", SHA256: fileDigest(t, filepath.Join(absolute, "web-1.0.0.tgz"))},
			server: abs, wantAsked: []string{"/charts/index.yaml", "/charts/web-1.0.0.tgz"}},
		{name: "another archive than the pinned one", chart: Chart{Name: "web", Version: "1.0.5", Repo: abs.URL + "/charts", SHA256: fileDigest(t, filepath.Join(absolute, "web-1.0.0.tgz"))},
			server: abs, wantAsked: []string{"/charts/index.yaml", "/charts/web-1.0.5.tgz"},
			wantErr: "chart web 1.0.5: " + abs.URL + "/charts/web-1.0.5.tgz: sha256 ", wantIn: "pinned: refused"},
		{name: "an archive that is not the one its index names", chart: Chart{Name: "web", Version: "1.0.0", Repo: tam.URL + "/charts"},
			server: tam, wantAsked: []string{"/charts/index.yaml", "/charts/web-1.0.0.tgz"},
			wantErr: "chart web 1.0.0: " + tam.URL + "/charts/web-1.0.0.tgz: sha256 ", wantIn: "pinned: refused"},
		{name: "a repository over plain http", chart: Chart{Name: "web", Version: "1.0.0", Repo: "http://127.0.0.1:1/charts"},
			wantErr: "chart web 1.0.0 in http://127.0.0.1:1/charts: http://127.0.0.1:1/charts/index.yaml: only https is fetched"},
		{name: "an unreachable repository", chart: Chart{Name: "web", Version: "1.0.0", Repo: unreachable},
			wantErr: "chart web 1.0.0 in " + unreachable + ": ", wantIn: "connection refused"},
		{name: "a scheme other than https", source: "ftp://mirror.example/charts", chart: Chart{Name: "web", Version: "1.0.0"},
			wantErr: "chart web 1.0.0 in ftp://mirror.example/charts: ftp://mirror.example/charts/index.yaml: only https is fetched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before int
			if tc.server != nil {
				before = len(tc.server.asked())
			}
			ch, err := tc.source.Load(context.Background(), tc.chart)
			if tc.server != nil {
				if got := tc.server.asked()[before:]; !slices.Equal(got, tc.wantAsked) {
					t.Errorf("asked for %q, want %q", got, tc.wantAsked)
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.wantIn) {
					t.Fatalf("error %v, want one starting %q with %q", err, tc.wantErr, tc.wantIn)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ch.Metadata.Name != tc.chart.Name || ch.Metadata.Version != tc.chart.Version {
				t.Errorf("loaded %s %s", ch.Metadata.Name, ch.Metadata.Version)
			}
		})
	}

	t.Run("the download stops with its context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Source(abs.URL+"/charts").Load(ctx, Chart{Name: "web", Version: "1.0.0"})
		if err == nil || !strings.HasPrefix(err.Error(), "chart web 1.0.0 in "+abs.URL+"/charts: ") || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("error %v", err)
		}
	})
}

// ociRegistry is an OCI distribution registry over TLS that holds one chart
// as `helm push` stores it (the archive as a layer), asking for a login.
func ociRegistry(t *testing.T, repo, tag string, archive []byte, user, password string) *httptest.Server {
	t.Helper()
	digest := func(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }
	config := []byte(`{"name":"web","version":"1.0.0","apiVersion":"v2"}`)
	manifest := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":%q,"size":%d}]}`,
		digest(config), len(config), digest(archive), len(archive)))
	blobs := map[string][]byte{digest(config): config, digest(archive): archive}
	return httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch p := r.URL.Path; {
		case p == "/v2/":
		case p == "/v2/"+repo+"/manifests/"+tag || p == "/v2/"+repo+"/manifests/"+digest(manifest):
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", digest(manifest))
			w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
			if r.Method == http.MethodGet {
				w.Write(manifest)
			}
		case strings.HasPrefix(p, "/v2/"+repo+"/blobs/") && blobs[strings.TrimPrefix(p, "/v2/"+repo+"/blobs/")] != nil:
			b := blobs[strings.TrimPrefix(p, "/v2/"+repo+"/blobs/")]
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			if r.Method == http.MethodGet {
				w.Write(b)
			}
		default:
			http.NotFound(w, r)
		}
	}))
}

// An OCI registry holding the charts (spec.mirrors.charts: oci://...):
// pulled by Helm's registry client over HTTPS with the site's CA and login,
// the archive checked against its pin like a repository's.
func TestLoadFromOCI(t *testing.T) {
	dir := t.TempDir()
	archive, err := os.ReadFile(saveChart(t, testChart("web", "1.0.0"), dir, ""))
	if err != nil {
		t.Fatal(err)
	}
	srv := ociRegistry(t, "site/charts/web", "1.0.0", archive, "robot", "pw")
	defer srv.Close()
	ca := pemOf(srv.Certificate())
	src := Source("oci://" + srv.Listener.Addr().String() + "/site/charts")
	sum := sha256.Sum256(archive)
	pinned := Chart{Name: "web", Version: "1.0.0", SHA256: hex.EncodeToString(sum[:])}
	for _, tt := range []struct {
		name  string
		chart Chart
		a     Access
		err   string
	}{
		{"pinned, with CA and login", pinned, Access{CA: ca, Username: "robot", Password: "pw"}, ""},
		{"unpinned", Chart{Name: "web", Version: "1.0.0"}, Access{CA: ca, Username: "robot", Password: "pw"}, ""},
		{"another pin", Chart{Name: "web", Version: "1.0.0", SHA256: strings.Repeat("0", 64)}, Access{CA: ca, Username: "robot", Password: "pw"}, "but the bill of materials pins"},
		{"without the site's CA", pinned, Access{Username: "robot", Password: "pw"}, "certificate"},
		{"without the login", pinned, Access{CA: ca}, "basic credential not found"},
		{"a version it lacks", Chart{Name: "web", Version: "9.9.9"}, Access{CA: ca, Username: "robot", Password: "pw"}, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := src.LoadWith(context.Background(), tt.chart, tt.a)
			if tt.err == "" {
				if err != nil || ch.Metadata.Version != "1.0.0" {
					t.Fatalf("%v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// Every chart the bill of materials pins whose real archive the fixtures
// hold (as an air-gapped site's spec.mirrors.charts) loads from the
// directory at the pinned version; the device plugin brings node feature
// discovery as its subchart, and kube-prometheus-stack brings CRDs (what
// CRDsServerSide applies).
func TestPinnedChartsFromTheFixtures(t *testing.T) {
	dir := fixtures.Dir(t, "charts")
	found := 0
	for _, pin := range manifests.Bill().Charts {
		c := Pinned(pin.Name)
		if c != (Chart{Name: pin.Name, Version: pin.Version, Repo: pin.Repo}) || c.Repo == "" {
			t.Errorf("Pinned(%q) = %+v, the bill has %+v", pin.Name, c, pin)
		}
		if _, err := os.Stat(filepath.Join(dir, c.Name+"-"+c.Version+".tgz")); err != nil {
			t.Logf("%s: no archive in the fixtures", c)
			continue
		}
		found++
		for _, src := range []Source{Source(dir), Source("file://" + dir)} {
			ch, err := src.Load(context.Background(), c)
			if err != nil {
				t.Errorf("%s from %s: %v", c, src, err)
				continue
			}
			if ch.Metadata.Name != c.Name || strings.TrimPrefix(ch.Metadata.Version, "v") != strings.TrimPrefix(c.Version, "v") {
				t.Errorf("%s: loaded %s %s", c, ch.Metadata.Name, ch.Metadata.Version)
			}
			if err := ch.Validate(); err != nil {
				t.Errorf("%s: %v", c, err)
			}
			var deps []string
			for _, d := range ch.Dependencies() {
				deps = append(deps, d.Name())
			}
			switch c.Name {
			case "nvidia-device-plugin":
				if !slices.Contains(deps, "node-feature-discovery") {
					t.Errorf("%s: subcharts %v, want node-feature-discovery", c, deps)
				}
			case "kube-prometheus-stack":
				if len(ch.CRDObjects()) == 0 {
					t.Errorf("%s carries no CRDs", c)
				}
			}
		}
	}
	if found == 0 {
		t.Fatalf("none of the pinned charts is in %s", dir)
	}
}

func TestPinnedPanicsOnAnUnknownChart(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `pins no chart "no-such-chart"`) {
			t.Errorf("recovered %v", r)
		}
	}()
	Pinned("no-such-chart")
}
