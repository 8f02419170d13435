package bundlefs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Files serves a bundle's package repositories and public key to hosts
// (GET and HEAD only, no directory listings): what apt reads as
// `deb [signed-by=...] http://HOST:PORT/packages/...`. The private key,
// the manifest's neighbours and anything else are not served.
func Files(dir string) http.Handler {
	fs := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean("/" + r.URL.Path)
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
		case strings.HasSuffix(r.URL.Path, "/"), !strings.HasPrefix(p, "/"+PackagesDir+"/") && p != "/"+PublicKeyFile:
			http.NotFound(w, r)
		default:
			fs.ServeHTTP(w, r)
		}
	})
}

// Registry serves a bundle's OCI image layout as a read-only registry
// (the distribution API's pulls: manifests by tag or digest, blobs), under
// the names a site's registry mirror gives them: REGISTRY/REPOSITORY, as
// containerd asks a mirror for registry.k8s.io/pause when its hosts.toml
// names the mirror for registry.k8s.io (spec.mirrors.registry).
type Registry struct {
	dir  string
	once sync.Once
	tags map[string]v1.Descriptor // full reference name:tag -> descriptor
	err  error
}

// NewRegistry serves the layout in dir/images.
func NewRegistry(dir string) *Registry { return &Registry{dir: filepath.Join(dir, ImagesDir)} }

var (
	manifestPath = regexp.MustCompile(`^/v2/(.+)/manifests/([^/]+)$`)
	blobPath     = regexp.MustCompile(`^/v2/(.+)/blobs/(sha256:[0-9a-f]{64})$`)
)

func (g *Registry) load() error {
	g.once.Do(func() {
		p, err := layout.FromPath(g.dir)
		if err != nil {
			g.err = err
			return
		}
		idx, err := p.ImageIndex()
		if err != nil {
			g.err = err
			return
		}
		m, err := idx.IndexManifest()
		if err != nil {
			g.err = err
			return
		}
		g.tags = map[string]v1.Descriptor{}
		for _, d := range m.Manifests {
			ref := d.Annotations[RefAnnotation]
			name, tag, ok := splitRef(ref)
			if !ok {
				continue
			}
			if tag != "" {
				g.tags[name+":"+tag] = d
			}
		}
	})
	return g.err
}

// splitRef is a full reference's name and tag ("" when named by digest
// alone).
func splitRef(ref string) (name, tag string, ok bool) {
	name, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[:i], name[i+1:], true
	}
	return name, "", name != ""
}

func (g *Registry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		registryError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "a bundle's registry is read-only")
		return
	}
	if r.URL.Path == "/v2/" || r.URL.Path == "/v2" {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "{}")
		return
	}
	if err := g.load(); err != nil {
		registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	if m := blobPath.FindStringSubmatch(r.URL.Path); m != nil {
		g.blob(w, r, m[2], "application/octet-stream")
		return
	}
	m := manifestPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		registryError(w, http.StatusNotFound, "NAME_UNKNOWN", "no such repository")
		return
	}
	name, ref := m[1], m[2]
	if strings.HasPrefix(ref, "sha256:") {
		// By digest: any manifest of the layout (an index's children too).
		b, err := os.ReadFile(g.blobFile(ref))
		if err != nil {
			registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "no manifest "+ref)
			return
		}
		var mt struct {
			MediaType string `json:"mediaType"`
		}
		if json.Unmarshal(b, &mt) != nil || mt.MediaType == "" {
			registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", ref+" is not a manifest")
			return
		}
		g.blob(w, r, ref, mt.MediaType)
		return
	}
	d, ok := g.tags[name+":"+ref]
	if !ok {
		registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "no manifest "+name+":"+ref+" in the bundle")
		return
	}
	g.blob(w, r, d.Digest.String(), string(d.MediaType))
}

func (g *Registry) blobFile(digest string) string {
	return filepath.Join(g.dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// blob serves the layout's blob digest as contentType.
func (g *Registry) blob(w http.ResponseWriter, r *http.Request, digest, contentType string) {
	f, err := os.Open(g.blobFile(digest))
	if err != nil {
		registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "no blob "+digest)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Etag", `"`+digest+`"`)
	http.ServeContent(w, r, "", st.ModTime(), f)
}

func registryError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}
