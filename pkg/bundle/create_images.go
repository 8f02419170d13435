package bundle

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/osfamily"
)

// imageTimeout bounds one image's pull: a registry that stops answering
// fails that image, not the run.
const imageTimeout = 20 * time.Minute

// imageJobs pull images at once; their blobs land in the layout as they
// come, the index is written one image at a time.
const imageJobs = 4

// images pulls every image into the bundle's OCI layout, from the site's
// registry mirror where the inventory has one, else from its registry: a
// multi-platform image keeps the platforms the hosts run (or all of them
// when it is named by digest: a digest names the whole index).
func (c *creator) images(ctx context.Context) error {
	all := c.list.known(Image)
	if len(all) == 0 {
		return nil
	}
	dir := filepath.Join(c.dir, bundlefs.ImagesDir)
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("images: %w", err)
		}
	}
	have, err := refsIn(p)
	if err != nil {
		return err
	}
	platforms := c.platforms()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		jobs = make(chan Artifact)
		errs []error
	)
	for range imageJobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range jobs {
				desc, err := c.pullImage(ctx, p, a, platforms)
				mu.Lock()
				if err == nil {
					err = p.AppendDescriptor(desc)
					if err == nil {
						c.fetched[Image]++
						c.o.Logf("image %s", a.Name)
					}
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("image %s: %w", a.Name, err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, a := range all {
		if have[a.Name] {
			continue
		}
		select {
		case jobs <- a:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		c.miss("%v", err)
	}
	return nil
}

// refsIn are the references the layout holds.
func refsIn(p layout.Path) (map[string]bool, error) {
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	out := map[string]bool{}
	for _, d := range m.Manifests {
		if r := d.Annotations[bundlefs.RefAnnotation]; r != "" {
			out[r] = true
		}
	}
	return out, nil
}

// platforms are the hosts' (linux on the package artifacts' architectures;
// amd64 when none is known).
func (c *creator) platforms() []v1.Platform {
	var out []v1.Platform
	for _, a := range c.list.Of(Package) {
		arch := cmp.Or(osfamily.DebArch(a.Arch), a.Arch) // dnf's x86_64 is OCI's amd64
		if arch != "" && !slices.ContainsFunc(out, func(p v1.Platform) bool { return p.Architecture == arch }) {
			out = append(out, v1.Platform{OS: "linux", Architecture: arch})
		}
	}
	if len(out) == 0 {
		out = []v1.Platform{{OS: "linux", Architecture: "amd64"}}
	}
	return out
}

// pullImage writes a's blobs into the layout and returns its descriptor,
// named.
func (c *creator) pullImage(ctx context.Context, p layout.Path, a Artifact, platforms []v1.Platform) (v1.Descriptor, error) {
	ctx, cancel := context.WithTimeout(ctx, imageTimeout)
	defer cancel()
	from := a.Name
	var nameOpts []name.Option
	if a.Source != "" {
		from = a.Source
		if rest, ok := strings.CutPrefix(from, "http://"); ok {
			from, nameOpts = rest, append(nameOpts, name.Insecure)
		}
	}
	ref, err := name.ParseReference(from, nameOpts...)
	if err != nil {
		return v1.Descriptor{}, err
	}
	opts, err := c.registryOptions(ctx, ref)
	if err != nil {
		return v1.Descriptor{}, err
	}
	rd, err := remote.Get(ref, opts...)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("from %s: %w", from, err)
	}
	var desc v1.Descriptor
	switch {
	case rd.MediaType.IsIndex():
		idx, err := rd.ImageIndex()
		if err != nil {
			return v1.Descriptor{}, err
		}
		if _, byDigest := ref.(name.Digest); !byDigest {
			keep := match.Platforms(platforms...)
			idx = mutate.RemoveManifests(idx, func(d v1.Descriptor) bool { return !keep(d) })
			m, err := idx.IndexManifest()
			if err != nil {
				return v1.Descriptor{}, err
			}
			if len(m.Manifests) == 0 {
				return v1.Descriptor{}, fmt.Errorf("from %s: no image for %v", from, platforms)
			}
		}
		if err := p.WriteIndex(idx); err != nil {
			return v1.Descriptor{}, err
		}
		if desc, err = describe(idx); err != nil {
			return v1.Descriptor{}, err
		}
	case rd.MediaType.IsImage():
		img, err := rd.Image()
		if err != nil {
			return v1.Descriptor{}, err
		}
		if err := p.WriteImage(img); err != nil {
			return v1.Descriptor{}, err
		}
		if desc, err = describe(img); err != nil {
			return v1.Descriptor{}, err
		}
	default:
		return v1.Descriptor{}, fmt.Errorf("from %s: media type %s is not an image", from, rd.MediaType)
	}
	if d, ok := ref.(name.Digest); ok && desc.Digest.String() != d.DigestStr() {
		return v1.Descriptor{}, fmt.Errorf("from %s: digest %s, not the one named", from, desc.Digest)
	}
	desc.Annotations = map[string]string{bundlefs.RefAnnotation: a.Name, bundlefs.ContainerdRefAnnotation: a.Name}
	return desc, nil
}

// describe is what the layout's index lists of an image or an index.
func describe(x interface {
	MediaType() (types.MediaType, error)
	Digest() (v1.Hash, error)
	Size() (int64, error)
}) (v1.Descriptor, error) {
	mt, err := x.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	d, err := x.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	n, err := x.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Digest: d, Size: n}, nil
}

// registryOptions reach ref's registry: the site's mirror with its CA and
// login, where ref is on the mirror's host; any other with this machine's
// docker credentials, if it has any.
func (c *creator) registryOptions(ctx context.Context, ref name.Reference) ([]remote.Option, error) {
	opts := []remote.Option{remote.WithContext(ctx)}
	m := c.inv.Cluster.Spec.Mirrors
	mirrorHost, _, _ := strings.Cut(strings.TrimPrefix(m.Registry, "http://"), "/")
	if m.Registry == "" || ref.Context().RegistryStr() != mirrorHost {
		return opts, nil
	}
	if l := m.RegistryLogin; l != nil {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: l.Username, Password: c.inv.Site.RegistryPassword}))
	}
	if ca := c.inv.Site.RegistryCA; len(ca) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(ca) {
			return nil, errors.New("the registry mirror's CA file holds no certificate")
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		opts = append(opts, remote.WithTransport(t))
	}
	return opts, nil
}
