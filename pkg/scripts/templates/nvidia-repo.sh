# Makes the NVIDIA driver's packages available: NVIDIA's CUDA repository
# (or the site's mirror of it), or the distribution's own components that
# carry them. Idempotent: a repository already set up as wanted is left as
# it is, and the package index is refreshed only after a change.
{{template "pm"}}
{{template "put"}}
changed=0
{{- if eq .Source "cuda-repo"}}
base={{quote .RepoURL}}
{{- if eq .Family.PackageManager "apt"}}
{{template "fetch"}}
{{- if .Components}}
{{template "components" .}}
# NVIDIA's Debian repository needs packages from contrib.
if [ -n "$(enable_components {{quoteEach .Components}})" ]; then changed=1; fi
{{- end}}
if ! dpkg-query -W -f='${db:Status-Status}' cuda-keyring 2>/dev/null | grep -qx installed; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fetch "${base}cuda-keyring_1.1-1_all.deb" "$tmp/cuda-keyring.deb"
  dpkg -i "$tmp/cuda-keyring.deb"
  changed=1
fi
# cuda-keyring names NVIDIA's own server; the source names the one wanted
# (a mirror, for an air-gapped site), signed by the same key.
list=/etc/apt/sources.list.d/cuda-{{.Family.CUDARepo}}-{{.Arch}}.list
line="deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] $base /"
if put "$list" "$line"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
{{- else}}
repo=/etc/yum.repos.d/cuda-{{.Family.CUDARepo}}.repo
want="[cuda-{{.Family.CUDARepo}}-{{.Arch}}]
name=cuda-{{.Family.CUDARepo}}-{{.Arch}}
baseurl=$base
enabled=1
gpgcheck=1
gpgkey=${base}{{.RPMKey}}"
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
