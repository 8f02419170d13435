package manifests

import (
	"strings"
	"testing"
)

func TestBill(t *testing.T) {
	b := Bill()
	if b.Kind != "BillOfMaterials" || b.APIVersion != "gpukit.dev/v1alpha1" {
		t.Fatalf("kind %q apiVersion %q", b.Kind, b.APIVersion)
	}
	for _, name := range []string{"flannel", "tigera-operator", "cilium", "nvidia-device-plugin", "local-path-provisioner",
		"nfs-subdir-external-provisioner", "traefik", "kube-prometheus-stack", "dcgm-exporter"} {
		if c := b.Chart(name); c.Version == "" || !strings.HasPrefix(c.Repo, "https://") {
			t.Errorf("chart %s: %+v", name, c)
		}
	}
	if im := b.Image("statsd-exporter"); !strings.Contains(im.Ref, ":v") {
		t.Errorf("statsd-exporter image %q has no tag", im.Ref)
	}
	if got := b.KubeflowArchive("26.03"); got != "https://github.com/kubeflow/manifests/archive/refs/tags/26.03.tar.gz" {
		t.Errorf("KubeflowArchive = %s", got)
	}
	v := b.KubeflowVersions()
	v[0] = "changed"
	if b.KubeflowVersions()[0] == "changed" {
		t.Error("KubeflowVersions shares the bill's slice")
	}
	for _, tc := range []struct{ repo, pm, file, fpr string }{
		{RepoCUDA, "apt", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"},
		{RepoCUDA, "dnf", "D42D0685.pub", "610C7B14E068A878070DA4E99CD0A493D42D0685"},
		{RepoContainerToolkit, "dnf", "gpgkey", "C95B321B61E88C1809C4F759DDCAE044F796ECB0"},
		{RepoKubernetes, "dnf", "repodata/repomd.xml.key", "DE15B14486CD377B9E876E1A234654DA9A296436"},
		{RepoDocker, "apt", "gpg", "9DC858229FC7DD38854AE2D88D81803C0EBFCD88"},
	} {
		k, ok := b.SigningKey(tc.repo, tc.pm)
		if !ok || k.File != tc.file || len(k.Fingerprints) != 1 || k.Fingerprints[0] != tc.fpr {
			t.Errorf("SigningKey(%s, %s) = %+v, %v", tc.repo, tc.pm, k, ok)
		}
		k.Fingerprints[0] = "changed"
		if k2, _ := b.SigningKey(tc.repo, tc.pm); k2.Fingerprints[0] == "changed" {
			t.Error("SigningKey shares the bill's slice")
		}
	}
	if len(b.CUDADrivers) < 10 || b.CUDADrivers[len(b.CUDADrivers)-1].CUDA != "13.3" {
		t.Errorf("cudaDrivers: %+v", b.CUDADrivers)
	}
}

func TestParseRefuses(t *testing.T) {
	good := string(YAML())
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown field", good + "\nextra: 1\n", "field extra not found"},
		{"empty default", strings.Replace(good, "kubernetes: 1.37.2", `kubernetes: ""`, 1), "defaults.kubernetes is empty"},
		{"default kubeflow not released", strings.Replace(good, `default: "26.03"`, `default: "27.01"`, 1), "kubeflow.default 27.01"},
		{"chart twice", strings.Replace(good, "  - name: cilium\n", "  - name: flannel\n", 1), "chart flannel listed twice"},
		{"minors", strings.Replace(good, "maxMinor: 37", "maxMinor: 30", 1), "minors 34 to 30"},
		{"short fingerprint", strings.Replace(good, "[9DC858229FC7DD38854AE2D88D81803C0EBFCD88]", "[0EBFCD88]", 1), `fingerprint "0EBFCD88"`},
		{"lower-case fingerprint", strings.Replace(good, "[9DC858229FC7DD38854AE2D88D81803C0EBFCD88]", "[9dc858229fc7dd38854ae2d88d81803c0ebfcd88]", 1), "upper-case"},
		{"key file escapes", strings.Replace(good, "file: gpgkey", "file: ../gpgkey", 1), `signing key file "../gpgkey"`},
		{"key file quote", strings.Replace(good, "file: gpgkey", `file: "gpg'key"`, 1), "signing key file"},
		{"no docker key for dnf", strings.Replace(good, "    packageManager: dnf\n    file: gpg\n", "    packageManager: apt\n    file: gpg\n", 1), "no key for the docker repository (dnf)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A version written as a YAML number keeps its text: 13.10 is not 13.1.
func TestUnquotedVersionKeepsItsText(t *testing.T) {
	b, err := Parse([]byte(strings.Replace(string(YAML()), `cuda: "13.0"`, `cuda: 13.10`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if b.Defaults.CUDA != "13.10" {
		t.Fatalf("defaults.cuda = %q; want 13.10", b.Defaults.CUDA)
	}
}

func TestUnknownPinPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "no chart \"nope\"") {
			t.Fatalf("recover() = %v", r)
		}
	}()
	Bill().Chart("nope")
}

// Every values file is a chart the bill pins, parses, and is handed out as a
// fresh copy.
func TestValues(t *testing.T) {
	files, err := ValuesFiles()
	if err != nil || len(files) == 0 {
		t.Fatalf("%v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".yaml")
		Bill().Chart(name) // panics for a chart the bill does not pin
		v, err := values(name)
		if err != nil || len(v) == 0 {
			t.Errorf("%s: %v %v", f, v, err)
		}
	}
	tr := Values("traefik")
	tr["ingressClass"].(map[string]any)["enabled"] = false
	if Values("traefik")["ingressClass"].(map[string]any)["enabled"] != true {
		t.Error("Values shares its maps between calls")
	}
	if v := Values("flannel"); v == nil || len(v) != 0 {
		t.Errorf("a chart without a file: %v", v)
	}
}

func TestObjects(t *testing.T) {
	objs := Objects("statsd-exporter")
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o["kind"].(string))
	}
	if strings.Join(kinds, ",") != "Deployment,Service,ServiceMonitor" {
		t.Fatalf("kinds %v", kinds)
	}
	objs[0]["kind"] = "changed"
	if Objects("statsd-exporter")[0]["kind"] != "Deployment" {
		t.Error("Objects shares its maps between calls")
	}
	if _, err := objects("nope"); err == nil {
		t.Error("a missing file is not an error")
	}
}
