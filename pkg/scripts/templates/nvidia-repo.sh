# Makes the NVIDIA driver's packages available: NVIDIA's CUDA repository
# (or the site's mirror of it), or the distribution's own components that
# carry them. Idempotent: a repository already set up as wanted is left as
# it is, and the package index is refreshed only after a change.
{{template "pm"}}
{{template "put"}}
changed=0
{{- if eq .Source "cuda-repo"}}
base={{quote .RepoURL}}
{{template "fetch"}}
{{template "keys"}}
{{- if eq .Family.PackageManager "apt"}}
{{- if .Components}}
{{template "components" .}}
# NVIDIA's Debian repository needs packages from contrib.
if [ -n "$(enable_components {{quoteEach .Components}})" ]; then changed=1; fi
{{- end}}
# NVIDIA's key, where NVIDIA's cuda-keyring package puts it (that package
# is not installed: its scripts would run as root, and nothing pins it).
keyring=/usr/share/keyrings/cuda-archive-keyring.gpg
if pinned_key "${base}"{{quote .Key.File}} "$keyring" gpg {{quoteEach .Key.Fingerprints}}; then changed=1; fi
# The source names the server wanted (a mirror, for an air-gapped site);
# the file's name is cuda-keyring's, so a source it left is replaced.
list=/etc/apt/sources.list.d/cuda-{{.Family.CUDARepo}}-{{.Arch}}.list
line="deb [signed-by=$keyring] $base /"
if put "$list" "$line"; then changed=1; fi
# NVIDIA's packages before the distribution's of the same names, as
# cuda-keyring's pin (the same file) has it.
if put /etc/apt/preferences.d/cuda-repository-pin-600 "Package: *
Pin: release l=NVIDIA CUDA
Pin-Priority: 600"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
{{- else}}
key=/etc/pki/rpm-gpg/gpukit-cuda.asc
if pinned_key "${base}"{{quote .Key.File}} "$key" asc {{quoteEach .Key.Fingerprints}}; then changed=1; fi
repo=/etc/yum.repos.d/cuda-{{.Family.CUDARepo}}.repo
want="[cuda-{{.Family.CUDARepo}}-{{.Arch}}]
name=cuda-{{.Family.CUDARepo}}-{{.Arch}}
baseurl=$base
enabled=1
gpgcheck=1
gpgkey=file://$key"
if put "$repo" "$want"; then changed=1; fi
# DKMS and the driver's build dependencies: CRB (9) or PowerTools (8), and EPEL.
dnf config-manager --set-enabled {{if eq .Family.Family "rhel-8"}}powertools{{else}}crb{{end}} 2>/dev/null || true
if [ "$changed" = 1 ]; then dnf -q makecache; fi
{{- end}}
{{- else}}
{{- if eq .Family.PackageManager "apt"}}
{{template "components" .}}
if [ -n "$(enable_components {{quoteEach .Components}})" ]; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
{{- end}}
{{- end}}
if [ "$changed" = 1 ]; then echo "gpukit: package sources changed"; fi
