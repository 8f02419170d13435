// Command grafana is a STAND-IN for Grafana, TEST TOOLING ONLY: the lab's
// image of Grafana, which the lab cannot build (Grafana is under the AGPL,
// so its modules are not to be used, and its web UI is a JavaScript build).
// It answers what gpukit's tests ask of the real one, the way Grafana's
// HTTP API answers it:
//   - GET /api/health: {"database":"ok",...}, without a login (the chart's
//     probes);
//   - GET /api/user: the admin login, HTTP basic auth against
//     GF_SECURITY_ADMIN_USER and GF_SECURITY_ADMIN_PASSWORD (the chart and
//     gpukit's swarm stack set them from the generated secret; a
//     GF_SECURITY_ADMIN_PASSWORD__FILE is read as Grafana reads it);
//   - GET /api/search: the dashboards provisioned under
//     $GF_PATHS_PROVISIONING/dashboards (each provider's options.path, as
//     Grafana's file provider reads it), title and uid of each, logged in.
//
// Every answer carries "X-Gpukit-Stand-In: grafana", so that no test can
// take it for the real Grafana.
package main

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

func main() {
	user := cmp.Or(os.Getenv("GF_SECURITY_ADMIN_USER"), "admin")
	password := os.Getenv("GF_SECURITY_ADMIN_PASSWORD")
	if f := os.Getenv("GF_SECURITY_ADMIN_PASSWORD__FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			log.Fatalf("grafana stand-in: %v", err)
		}
		password = strings.TrimSpace(string(b))
	}
	if password == "" {
		log.Fatal("grafana stand-in: no admin password (GF_SECURITY_ADMIN_PASSWORD)")
	}
	provisioning := cmp.Or(os.Getenv("GF_PATHS_PROVISIONING"), "/etc/grafana/provisioning")
	loggedIn := func(r *http.Request) bool {
		u, p, ok := r.BasicAuth()
		return ok && subtle.ConstantTimeCompare([]byte(u), []byte(user)) == 1 && subtle.ConstantTimeCompare([]byte(p), []byte(password)) == 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/health", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]string{"database": "ok", "version": "stand-in"})
	})
	mux.HandleFunc("GET /api/user", func(w http.ResponseWriter, r *http.Request) {
		if !loggedIn(r) {
			unauthorized(w)
			return
		}
		reply(w, map[string]any{"login": user, "isGrafanaAdmin": true})
	})
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		if !loggedIn(r) {
			unauthorized(w)
			return
		}
		reply(w, dashboards(filepath.Join(provisioning, "dashboards")))
	})
	addr := ":" + cmp.Or(os.Getenv("GF_SERVER_HTTP_PORT"), "3000")
	log.Printf("grafana STAND-IN (test tooling, not Grafana) on %s", addr)
	log.Fatal(http.ListenAndServe(addr, mux))
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("X-Gpukit-Stand-In", "grafana")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("X-Gpukit-Stand-In", "grafana")
	w.Header().Set("WWW-Authenticate", `Basic realm="Grafana"`)
	http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
}

type dashboard struct {
	Title string `json:"title"`
	UID   string `json:"uid"`
	Type  string `json:"type"`
}

// dashboards reads each provider of the provisioning files in dir and the
// dashboards' JSON files under its path.
func dashboards(dir string) []dashboard {
	out := []dashboard{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var cfg struct {
			Providers []struct {
				Options struct{ Path string }
			}
		}
		if yaml.Unmarshal(b, &cfg) != nil {
			continue
		}
		for _, p := range cfg.Providers {
			_ = filepath.WalkDir(p.Options.Path, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
					return nil
				}
				b, err := os.ReadFile(path)
				var db dashboard
				if err == nil && json.Unmarshal(b, &db) == nil && db.Title != "" {
					db.Type = "dash-db"
					out = append(out, db)
				}
				return nil
			})
		}
	}
	return out
}
