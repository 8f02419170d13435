# Installs the NVIDIA Container Toolkit {{.Version}}, its four packages
# pinned to that one version, and points the container runtime at it when
# the runtime is already installed (the runtime's own phase does it
# otherwise). nvidia-ctk merges its settings into the runtime's
# configuration: the user's other settings stay.
{{template "pm"}}
{{template "fetch"}}
{{template "put"}}
{{template "keys"}}
base={{quote .RepoURL}}
{{- if eq .Family.PackageManager "apt"}}
changed=0
keyring=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
if pinned_key "${base}"{{quote .Key.File}} "$keyring" gpg {{quoteEach .Key.Fingerprints}}; then changed=1; fi
list=/etc/apt/sources.list.d/nvidia-container-toolkit.list
line="deb [signed-by=$keyring] ${base}stable/deb/{{.DebArch}} /"
if put "$list" "$line"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
v={{quote .Version}}-1
pkgs=({{quoteEach .Packages}})
apt-mark unhold "${pkgs[@]}" >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends --allow-downgrades \
  "${pkgs[@]/%/=$v}"
apt-mark hold "${pkgs[@]}" >/dev/null
{{- else}}
key=/etc/pki/rpm-gpg/gpukit-nvidia-container-toolkit.asc
pinned_key "${base}"{{quote .Key.File}} "$key" asc {{quoteEach .Key.Fingerprints}} || true
repo=/etc/yum.repos.d/nvidia-container-toolkit.repo
want="[nvidia-container-toolkit]
name=nvidia-container-toolkit
baseurl=${base}stable/rpm/\$basearch
enabled=1
gpgcheck=0
repo_gpgcheck=1
gpgkey=file://$key"
put "$repo" "$want" || true
v={{quote .Version}}-1
pkgs=({{quoteEach .Packages}})
dnf -q versionlock delete "${pkgs[@]}" >/dev/null 2>&1 || true
dnf install -y -q "${pkgs[@]/%/-$v}"
dnf -q versionlock add "${pkgs[@]}"
{{- end}}
nvidia-ctk --version | head -n 1
# config_sum FILE...: a checksum of the runtime's configuration as it is now
# (files not there yet count as empty: nvidia-ctk creates them).
config_sum() { { cat "$@" 2>/dev/null || true; } | sha256sum; }
{{- range .Runtimes}}
if command -v {{quote .Binary}} >/dev/null 2>&1; then
  runtime={{quote .Name}}
  files=({{quoteEach .ConfigFiles}})
  before=$(config_sum "${files[@]}")
  nvidia-ctk runtime configure --runtime="$runtime"{{if $.SetAsDefault}} --set-as-default{{end}}
  if [ "$(config_sum "${files[@]}")" != "$before" ]; then
    echo "gpukit: $runtime configured for the NVIDIA runtime; restarting it"
    systemctl restart {{quote .Service}}
  fi
fi
{{- end}}
