package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/bundle"
	"github.com/gpukit/gpukit/pkg/bundlefs"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newBundleCmd(s Streams) *cobra.Command {
	return group(&cobra.Command{
		Use:   "bundle",
		Short: "What an air-gapped site needs for an inventory: OS packages, charts, Kubeflow's manifests, images",
		Example: `  gpukit bundle list -i cluster.yaml
  gpukit bundle create -i cluster.yaml /srv/gpukit-bundle
  gpukit bundle create --verify /srv/gpukit-bundle`,
	}, newBundleListCmd(s), newBundleCreateCmd(s), newBundleServeCmd(s), newBundleDaemonCmd(s))
}

func newBundleServeCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	var binary string
	cmd := &cobra.Command{
		Use:   "serve -i FILE",
		Short: "Serve the inventory's bundle (spec.bundle) from its host and point every host's apt at it",
		Long: `Serve the bundle of spec.bundle from its host, as init does first with spec.bundle:

  bundle/serve    the bundle host gets the bundle's files it lacks (by their sums in the manifest;
                  a tar of those over the host's SSH connection), gpukit (--gpukit-binary: linux,
                  the host's architecture; default this executable), the registry's certificate
                  (signed by the bundle's CA) and gpukit-bundle.service (gpukit bundle daemon:
                  packages over HTTP on spec.bundle.port, images over HTTPS on registryPort),
                  enabled, started, waited for; it survives reboots
  bundle/sources  every apt host: the bundle's repository of its distribution as a package source,
                  the bundle's key trusted for it only

With spec.bundle, every mirror of a run is the bundle (the package repositories, pinned to the
bundle's key; the registry, trusting the bundle's CA; the charts and Kubeflow's manifests from its
directory here): init, add-node and kubeflow deploy need nothing else. A second run changes nothing.`,
		Example: `  gpukit bundle serve -i cluster.yaml
  gpukit bundle serve -i cluster.yaml --gpukit-binary ./gpukit-linux-arm64`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, err := o.load(s)
			if err != nil {
				return err
			}
			if l.inv.Cluster.Spec.Bundle == nil {
				return usage(fmt.Errorf("%s: no spec.bundle: name the bundle's directory and the host that serves it", o.inventory))
			}
			sum, err := o.execute(cmd.Context(), s, l, flow.NewBundleServe(l.inv, gpukitBinary(binary)))
			if sum == nil {
				return err
			}
			return runError(err)
		},
	}
	o.addFlags(cmd, honours{writes: true, fanOut: true})
	cmd.Flags().StringVar(&binary, "gpukit-binary", "", "the gpukit executable the bundle host runs (linux, its architecture; default: this one)")
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) {
		return flow.NewBundleServe(inv, gpukitBinary(binary)), nil
	})
	return cmd
}

func newBundleDaemonCmd(s Streams) *cobra.Command {
	var listen, registryListen, certFile, keyFile string
	cmd := &cobra.Command{
		Use:   "daemon DIR",
		Short: "Serve a bundle on its host: the package repositories over HTTP, the images as a read-only registry over TLS",
		Long: `Serve the bundle in DIR until stopped: what the bundle host's gpukit-bundle.service runs (bundle
serve, or init with spec.bundle, installs it). The package repositories and the bundle's public key
over HTTP on --listen (apt checks every file against the bundle's signing key), nothing else of the
directory; the images of its OCI layout as a read-only registry over HTTPS on --registry-listen,
named as a registry mirror names them (registry.k8s.io/pause:3.10.1), with the certificate in
--tls-cert and --tls-key.`,
		Example: `  gpukit bundle daemon /var/lib/gpukit/bundle --tls-cert /etc/gpukit/bundle/registry.pem --tls-key /etc/gpukit/bundle/registry-key.pem`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if certFile == "" || keyFile == "" {
				return usage(errors.New("--tls-cert and --tls-key: the registry's certificate and key are required"))
			}
			if _, err := bundlefs.ReadManifest(args[0]); err != nil {
				return usage(err)
			}
			return serveBundle(cmd.Context(), s, args[0], listen, registryListen, certFile, keyFile)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":8480", "the packages' HTTP address")
	cmd.Flags().StringVar(&registryListen, "registry-listen", ":8443", "the registry's HTTPS address")
	cmd.Flags().StringVar(&certFile, "tls-cert", "", "the registry's certificate (PEM)")
	cmd.Flags().StringVar(&keyFile, "tls-key", "", "the registry's key (PEM)")
	return cmd
}

// serveBundle serves until ctx ends (SIGTERM from systemd), then shuts
// both servers down.
func serveBundle(ctx context.Context, s Streams, dir, listen, registryListen, certFile, keyFile string) error {
	files := &http.Server{Addr: listen, Handler: bundlefs.Files(dir), ReadHeaderTimeout: 30 * time.Second}
	reg := &http.Server{Addr: registryListen, Handler: bundlefs.NewRegistry(dir), ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	errs := make(chan error, 2)
	go func() { errs <- files.ListenAndServe() }()
	go func() { errs <- reg.ListenAndServeTLS(certFile, keyFile) }()
	fmt.Fprintf(s.Err, "gpukit bundle daemon: %s: packages on %s (http), images on %s (https)\n", dir, listen, registryListen)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	files.Shutdown(shut)
	reg.Shutdown(shut)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// errUnknownArtifacts: the list is printed, but some artifacts could not be
// named (hosts that did not answer, charts that could not be loaded).
var errUnknownArtifacts = errors.New("some artifacts could not be named")

func newBundleListCmd(s Streams) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "list -i FILE",
		Short: "List every artifact the inventory implies, from the bill of materials and the hosts' facts",
		Long: `Connect to every host (one SSH connection each, host keys verified), read its facts in one
round trip, and list everything init, add-node and kubeflow deploy would fetch for this
inventory, so that an air-gapped site can mirror or bundle it. Nothing is changed on any host.

  packages        per OS family and package source, as the NVIDIA layer and the orchestrator's
                  install them: the driver, fabric manager, persistence daemon, CUDA toolkit,
                  container toolkit, the kernel headers of each host's running kernel and the
                  DKMS build tools, kubeadm/kubelet/kubectl and containerd (or Docker), at the
                  versions pinned; their dependencies are resolved when the bundle is made
  charts          every Helm release's chart at its pinned version (CNI, device plugin, storage,
                  Traefik, monitoring, DCGM exporter), from its repository or spec.mirrors.charts
  kubeflow        the release's manifests and the remote bases its example reaches
  images          kubeadm's (the bill of materials' kubeadmImages), every chart's (rendered
                  with the inventory's values), the statsd exporter's, Kubeflow's (built in-process)

A host that does not answer is listed as unknown (its OS family, kernel and GPUs decide its
packages), as is a chart that cannot be loaded. Exit code 0 when every artifact is named,
1 when some are unknown (the list is still printed), 2 on bad input.`,
		Example: `  gpukit bundle list -i cluster.yaml
  gpukit bundle list -i cluster.yaml -o json | tail -n 1 | jq '.artifacts[] | select(.kind == "image") | .name'`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printPhases(s)
			}
			l, list, err := o.bundleList(cmd.Context(), s)
			if list == nil {
				return err
			}
			if err := writeBundleList(l.out, list); err != nil {
				return err
			}
			if n := len(list.Unknown()); n > 0 {
				return fmt.Errorf("%w: %d (listed under unknown)", errUnknownArtifacts, n)
			}
			return nil
		},
	}
	o.addFlags(cmd, honours{fanOut: true})
	o.phaseFlags(cmd, func(inv *inventory.Inventory) (flow.Flow, error) { return flow.NewBundleList(inv), nil })
	return cmd
}

// bundleList reads every host's facts and works the list out from them
// (nil list: the run did not start, or the list could not be made).
func (o *runOptions) bundleList(ctx context.Context, s Streams) (*loaded, *bundle.List, error) {
	l, err := o.load(s)
	if err != nil {
		return nil, nil, err
	}
	sum, err := o.execute(ctx, s, l, flow.NewBundleList(l.inv))
	if sum == nil {
		return nil, nil, err
	}
	// Kubeflow's build warnings are kustomize's about its manifests, not
	// about the list: dropped.
	list, err := bundle.Compute(ctx, l.inv, bundleHosts(l.inv, sum), nil)
	return l, list, err
}

// bundleHosts are the inventory's hosts with the facts the run read (none
// for a host that did not answer, with its error).
func bundleHosts(inv *inventory.Inventory, sum *engine.Summary) []bundle.Host {
	res := map[string]engine.HostResult{}
	for _, h := range sum.Hosts {
		res[h.Host] = h
	}
	var out []bundle.Host
	for _, m := range inv.Machines {
		r := res[m.Name]
		out = append(out, bundle.Host{Machine: m, Facts: r.Facts, Err: r.Err})
	}
	return out
}

// bundleListResult is `gpukit bundle list`'s final object. It is the one
// result typed here rather than in internal/flow: pkg/bundle reads every
// layer's decisions, and the flows importing it would lengthen the longest
// import chain (test/imports).
type bundleListResult struct {
	flow.Header
	*bundle.List
}

// writeBundleList writes the list after the run's events: one JSON object
// (-o json), else the list in words.
func writeBundleList(out ui.Output, l *bundle.List) error {
	if out.Format == ui.FormatJSON {
		return writeResult(out, &bundleListResult{Header: flow.NewHeader(flow.KindBundleList), List: l})
	}
	fmt.Fprintln(out.W)
	return bundle.WriteText(out.W, l)
}

type bundleCreateOptions struct {
	runOptions
	dir       string
	verify    bool
	osMirrors []string
	keyrings  []string
	osKeys    []string
}

func newBundleCreateCmd(s Streams) *cobra.Command {
	o := &bundleCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create -i FILE DIR",
		Short: "Gather everything the inventory implies into one directory, signed and summed, for an air-gapped site",
		Long: `Read every host's facts (as bundle list does), then fetch every artifact the inventory
implies into the directory DIR, from the inventory's mirrors where it names them, else from upstream:

  packages/    apt repositories signed by a key gpukit makes for the bundle (key/bundle.asc; the
               private key stays in private/, mode 0600): each package set's dependency closure
               for a fresh host, resolved against its sources, which are verified against their
               pinned keys (the bill of materials' distributions and signingKeys, or
               spec.mirrors.signingKeys); laid out as the NVIDIA, Kubernetes and Docker mirrors
               are (packages/nvidia/, packages/kubernetes/, packages/docker/), and the
               distribution's own packages in packages/os/FAMILY/
  charts/      every chart's archive, checked, with a Helm repository index
  kubeflow/    the release's manifests and its remote bases
  images/      an OCI image layout, each image named by its full reference; the platforms the
               hosts run (all of them for an image named by digest)
  bundle.json  the manifest: every file's size and sha256, the list it was made from, and what
               could not be had

A second run fetches only what is missing (it reads the repositories' signed indexes again, to
know). An artifact that cannot be had is named, the manifest says the bundle is not complete,
and the exit code is 1. --verify checks DIR against its manifest and fetches nothing.

--os-mirror FAMILY=URL[,URL] replaces the bill's archives of a family (debian-12: Debian's archive,
then its security archive) with a site's mirrors; --keyring FAMILY=FILE the keyring that holds
their keys (default: the distribution's, as the bill names it), and --os-key FAMILY=FPR[,FPR] the
keys pinned in it, for a mirror the site re-signs with its own key.`,
		Example: `  gpukit bundle create -i cluster.yaml /srv/gpukit-bundle
  gpukit bundle create -i cluster.yaml /srv/gpukit-bundle --os-mirror debian-12=http://mirror.site/debian/,http://mirror.site/debian-security/
  gpukit bundle create --verify /srv/gpukit-bundle`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if o.verify {
				return verifyBundle(s, o.dir)
			}
			mirrors, err := familyFlags("--os-mirror", o.osMirrors)
			if err != nil {
				return err
			}
			keyrings, err := familyFlags("--keyring", o.keyrings)
			if err != nil {
				return err
			}
			osKeys, err := familyFlags("--os-key", o.osKeys)
			if err != nil {
				return err
			}
			l, list, err := o.bundleList(cmd.Context(), s)
			if list == nil {
				return err
			}
			opts := bundle.Options{OSMirrors: map[string][]string{}, Keyrings: map[string]string{}, OSFingerprints: map[string][]string{}}
			for f, v := range osKeys {
				opts.OSFingerprints[f] = strings.Split(v, ",")
			}
			for f, v := range mirrors {
				opts.OSMirrors[f] = strings.Split(v, ",")
			}
			for f, v := range keyrings {
				opts.Keyrings[f] = v
			}
			if l.out.Format != ui.FormatJSON {
				opts.Logf = func(format string, args ...any) { fmt.Fprintf(s.Err, "bundle: "+format+"\n", args...) }
			}
			began := time.Now()
			m, stats, cerr := bundle.Create(cmd.Context(), l.inv, list, o.dir, opts)
			if m == nil {
				return cerr
			}
			if err := writeBundleCreate(l.out, o.dir, m, stats, time.Since(began)); err != nil {
				return err
			}
			return cerr
		},
	}
	o.addFlags(cmd, honours{fanOut: true})
	cmd.Flags().BoolVar(&o.verify, "verify", false, "check the bundle in DIR against its manifest; fetch nothing, read no inventory")
	cmd.Flags().StringArrayVar(&o.osMirrors, "os-mirror", nil, "FAMILY=URL[,URL]: a site's mirrors of a distribution's archives, in the bill's order")
	cmd.Flags().StringArrayVar(&o.keyrings, "keyring", nil, "FAMILY=FILE: the keyring holding the keys of a distribution's archives")
	cmd.Flags().StringArrayVar(&o.osKeys, "os-key", nil, "FAMILY=FINGERPRINT[,FINGERPRINT]: the keys --keyring's archives are signed with (a mirror re-signed by the site)")
	return cmd
}

// familyFlags reads FAMILY=VALUE flags of one kind.
func familyFlags(flag string, values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		f, val, ok := strings.Cut(v, "=")
		if !ok || f == "" || val == "" {
			return nil, usage(fmt.Errorf("%s %q: want FAMILY=VALUE (debian-12=...)", flag, v))
		}
		if _, ok := out[f]; ok {
			return nil, usage(fmt.Errorf("%s: %s given twice", flag, f))
		}
		out[f] = val
	}
	return out, nil
}

// verifyBundle checks a bundle against its manifest.
func verifyBundle(s Streams, dir string) error {
	problems, err := bundlefs.Verify(dir)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		fmt.Fprintf(s.Out, "bundle %s: every file as its manifest says, complete\n", dir)
		return nil
	}
	for _, p := range problems {
		fmt.Fprintf(s.Out, "bundle %s: %s\n", dir, p)
	}
	return fmt.Errorf("bundle %s: %d problem(s)", dir, len(problems))
}

// bundleCreateResult is `gpukit bundle create`'s final object (typed here
// for the reason bundleListResult is).
type bundleCreateResult struct {
	flow.Header
	Dir         string          `json:"dir"`
	Complete    bool            `json:"complete"`
	Missing     []string        `json:"missing,omitempty"`
	Fingerprint string          `json:"fingerprint"`
	Stats       []bundleKindRun `json:"kinds"`
	Seconds     float64         `json:"seconds"`
}

type bundleKindRun struct {
	Kind    bundle.Kind `json:"kind"`
	Files   int         `json:"files"`
	Bytes   int64       `json:"bytes"`
	Fetched int         `json:"fetched"`
	Seconds float64     `json:"seconds"`
}

func writeBundleCreate(out ui.Output, dir string, m *bundlefs.Manifest, stats []bundle.Stats, took time.Duration) error {
	res := &bundleCreateResult{Header: flow.NewHeader(flow.KindBundleCreate), Dir: dir, Complete: m.Complete, Missing: m.Missing,
		Fingerprint: m.Fingerprint, Seconds: took.Seconds()}
	for _, st := range stats {
		res.Stats = append(res.Stats, bundleKindRun{Kind: st.Kind, Files: st.Files, Bytes: st.Bytes, Fetched: st.Fetched, Seconds: st.Took.Seconds()})
	}
	if out.Format == ui.FormatJSON {
		return writeResult(out, res)
	}
	w := out.W
	fmt.Fprintf(w, "\nbundle %s (key %s), in %s:\n", dir, m.Fingerprint, took.Round(time.Second))
	for _, st := range res.Stats {
		fmt.Fprintf(w, "  %-12s %6d files %10s  %d fetched now, %s\n", st.Kind, st.Files, size(st.Bytes), st.Fetched, time.Duration(st.Seconds*float64(time.Second)).Round(100*time.Millisecond))
	}
	if m.Complete {
		fmt.Fprintln(w, "complete")
		return nil
	}
	fmt.Fprintf(w, "NOT complete: %d missing\n", len(m.Missing))
	for _, x := range m.Missing {
		fmt.Fprintf(w, "  %s\n", x)
	}
	return nil
}

// size is n bytes for a reader.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
