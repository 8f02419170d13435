# NVSwitch systems (HGX, DGX) need the fabric manager, at exactly the
# driver's version, before their GPUs can talk to each other (CUDA fails
# with "system not yet initialized" without it).
{{template "pm"}}
{{template "pkgver" .}}
pkg={{quote .Package}}
v=$(newest "$pkg" {{quote .Version}})
if [ -z "$v" ]; then
  echo "gpukit: no $pkg at driver version {{.Version}} in this host's package sources: the fabric manager must match the driver exactly" >&2
  exit 3
fi
{{- if eq .Family.PackageManager "apt"}}
apt-mark unhold "$pkg" >/dev/null 2>&1 || true
apt-get install -y -q --no-install-recommends --allow-downgrades "$pkg=$v"
apt-mark hold "$pkg" >/dev/null
{{- else}}
dnf -q versionlock delete "$pkg" >/dev/null 2>&1 || true
dnf install -y -q "$pkg-$v"
dnf -q versionlock add "$pkg"
{{- end}}
systemctl enable nvidia-fabricmanager
if [ -e /sys/module/nvidia ]; then systemctl restart nvidia-fabricmanager; fi
