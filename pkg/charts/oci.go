package charts

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/registry"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// Access is how gpukit reaches an oci:// chart source beyond the system's
// trust: a CA of the site's and a login.
type Access struct {
	// CA is PEM certificates trusted beside the system's.
	CA []byte
	// Username and Password log in (HTTP basic authentication).
	Username, Password string
}

// AccessOf is the access of inv's oci:// chart mirror: one on the registry
// mirror's host (a site's one registry for images and charts) trusts its CA
// and uses its login; any other trusts the system and `helm registry login`.
func AccessOf(inv *inventory.Inventory) Access {
	m := inv.Cluster.Spec.Mirrors
	ref, ok := strings.CutPrefix(m.Charts, "oci://")
	if !ok || m.Registry == "" {
		return Access{}
	}
	host, _, _ := strings.Cut(ref, "/")
	mirror, _, _ := strings.Cut(strings.TrimPrefix(m.Registry, "http://"), "/")
	if host != mirror {
		return Access{}
	}
	a := Access{CA: inv.Site.RegistryCA}
	if l := m.RegistryLogin; l != nil {
		a.Username, a.Password = l.Username, inv.Site.RegistryPassword
	}
	return a
}

// ociTimeout bounds one chart's pull (Helm's registry client takes no
// context): a registry that stops answering fails the phase.
const ociTimeout = 2 * time.Minute

// pullOCI pulls c from the registry repository base/NAME, tag VERSION (as
// `helm push` names it: + becomes _), over HTTPS only. The archive is the
// layer `helm push` stored as is: its sha256 is checked against the pin as
// for a repository's archive; unpinned, the registry's digest is checked by
// the client.
func pullOCI(base string, c Chart, a Access) ([]byte, string, error) {
	ref := strings.TrimSuffix(strings.TrimPrefix(base, "oci://"), "/") + "/" + c.Name + ":" + strings.ReplaceAll(c.Version, "+", "_")
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if len(a.CA) > 0 && !roots.AppendCertsFromPEM(a.CA) {
		return nil, "", fmt.Errorf("chart %s: the registry's CA holds no certificate", c)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(&http.Client{Transport: transport, Timeout: ociTimeout})}
	if a.Username != "" {
		opts = append(opts, registry.ClientOptBasicAuth(a.Username, a.Password))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", c, err)
	}
	res, err := client.Pull(ref, registry.PullOptWithChart(true))
	if err != nil {
		return nil, "", fmt.Errorf("chart %s from oci://%s: %w", c, ref, err)
	}
	data := res.Chart.Data
	if len(data) > maxArchive {
		return nil, "", fmt.Errorf("chart %s from oci://%s: %d bytes, more than %d", c, ref, len(data), maxArchive)
	}
	if c.SHA256 != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != c.SHA256 {
			return nil, "", fmt.Errorf("chart %s from oci://%s: sha256 %s, but the bill of materials pins %s", c, ref, got, c.SHA256)
		}
	}
	return data, "oci://" + ref, nil
}
