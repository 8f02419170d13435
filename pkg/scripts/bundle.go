package scripts

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/gpukit/gpukit/pkg/ssh"
)

var (
	bundleHostStateTemplate = parse[BundleHostParams]("bundle-host-state.sh")
	bundleHostTemplate      = parse[BundleHostParams]("bundle-host.sh")
	bundleSourcesTemplate   = parse[BundleSourcesParams]("bundle-sources.sh")
)

// BundleHostParams are where a bundle host keeps an offline bundle and
// what serves it (gpukit-bundle.service).
type BundleHostParams struct {
	// Dir holds the bundle; Binary is gpukit; Cert and Key the registry's
	// certificate; Unit the service's unit file. Absolute paths.
	Dir, Binary, Cert, Key, Unit string
	// Port and RegistryPort are the daemon's.
	Port, RegistryPort int
	// Files: the state also prints the manifest the host holds.
	Files bool
	// Incoming is the uploaded tar of the files that changed ("" none);
	// Restart restarts the service even when no file of the bundle did
	// (its daemon, certificate or unit changed).
	Incoming string
	Restart  bool
	// ExtractOnly puts Incoming in place and does nothing else: a part of
	// the files, the service handled after the last.
	ExtractOnly bool
	// Remove stops serving and removes it all (gpukit reset).
	Remove bool
}

// Validate checks the paths and ports.
func (p BundleHostParams) Validate() error {
	for _, f := range []string{p.Dir, p.Binary, p.Cert, p.Key, p.Unit} {
		if !path.IsAbs(f) || path.Clean(f) != f || strings.ContainsAny(f, "\n'\"$`\\ ") {
			return fmt.Errorf("bundle host: path %q: want a clean absolute path", f)
		}
	}
	if p.Incoming != "" && (!path.IsAbs(p.Incoming) || path.Clean(p.Incoming) != p.Incoming) {
		return fmt.Errorf("bundle host: incoming %q: want a clean absolute path", p.Incoming)
	}
	for _, port := range []int{p.Port, p.RegistryPort} {
		if port < 1 || port > 65535 {
			return fmt.Errorf("bundle host: port %d", port)
		}
	}
	return nil
}

// BundleHostState reads what the host serves.
func BundleHostState(p BundleHostParams) (ssh.Command, error) {
	return command("read the bundle the host serves", bundleHostStateTemplate, p)
}

// BundleHost puts the uploaded files in place, removes the files gone
// from the bundle (paths relative to Dir, each clean) and (re)starts the
// service.
func BundleHost(p BundleHostParams, remove []string) (ssh.Command, error) {
	for _, f := range remove {
		if f == "" || path.IsAbs(f) || path.Clean(f) != f || strings.HasPrefix(f, "../") || f == ".." {
			return ssh.Command{}, fmt.Errorf("bundle host: file %q to remove: not a clean relative path", f)
		}
	}
	name := "serve the bundle"
	switch {
	case p.Remove:
		name = "stop serving the bundle"
	case p.ExtractOnly:
		name = "put a part of the bundle in place"
	}
	cmd, err := command(name, bundleHostTemplate, p)
	cmd.Args = remove
	return cmd, err
}

// BundleSourcesParams point apt at an offline bundle's repository of the
// host's distribution, or take it away (Remove).
type BundleSourcesParams struct {
	// URL is the flat repository's URL (http(s), ending in "/"); Key the
	// bundle's public key, armored.
	URL, Key string
	// Check only says what differs ("pending: ..." lines).
	Check, Remove bool
}

// Validate checks the URL and the key.
func (p BundleSourcesParams) Validate() error {
	if p.Remove {
		return nil
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(u.Path, "/") || strings.ContainsAny(p.URL, " \n'\"") {
		return fmt.Errorf("bundle sources: URL %q: want http(s)://host/path/", p.URL)
	}
	if !strings.HasPrefix(p.Key, "-----BEGIN PGP PUBLIC KEY BLOCK-----") {
		return errors.New("bundle sources: the key is not an armored OpenPGP public key")
	}
	return nil
}

// BundleSources renders the bundle's package source.
func BundleSources(p BundleSourcesParams) (ssh.Command, error) {
	name := "point apt at the bundle"
	switch {
	case p.Remove && p.Check:
		name = "read the bundle's package source left"
	case p.Remove:
		name = "remove the bundle's package source"
	case p.Check:
		name = "read the bundle's package source"
	}
	return command(name, bundleSourcesTemplate, p)
}
