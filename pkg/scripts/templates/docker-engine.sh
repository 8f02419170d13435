# Installs the Docker engine{{if .Version}} {{.Version}}{{end}} from
# {{if eq .Source "docker-ce"}}Docker's repository{{else}}the distribution's packages{{end}}, holds it against upgrades
# and starts it. A host that has it already is left as it is (gpukit checks
# the packages before it runs this).
{{template "put"}}
{{template "pkgver" .}}
{{- if eq .Source "docker-ce"}}
{{template "fetch"}}
base={{quote .RepoURL}}
{{- if eq .Family.PackageManager "apt"}}
keyring=/etc/apt/keyrings/docker.asc
changed=0
if [ ! -s "$keyring" ]; then
  mkdir -p /etc/apt/keyrings
  tmp=$(mktemp)
  fetch "${base}gpg" "$tmp"
  install -m 0644 "$tmp" "$keyring"
  rm -f "$tmp"
  changed=1
fi
if put /etc/apt/sources.list.d/docker.list "deb [signed-by=$keyring] $base {{.Family.Codename}} stable"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
{{- else}}
put /etc/yum.repos.d/docker-ce.repo "[docker-ce-stable]
name=Docker CE Stable - \$basearch
baseurl=${base}\$releasever/\$basearch/stable
enabled=1
gpgcheck=1
gpgkey=${base}gpg" || true
{{- end}}
{{- end}}
pinned=({{quoteEach .Packages}})
extra=({{quoteEach .Extra}})
want={{quote .Version}}
# A host whose package index never listed the engine (a fresh install, no
# earlier apt-get update) gets the index refreshed once.
for p in "${pinned[@]}" "${extra[@]}"; do
{{- if eq .Family.PackageManager "apt"}}
  if [ -z "$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" { print $2 }')" ]; then
    apt-get update -q
    break
  fi
{{- else}}
  if ! dnf -q list "$p" >/dev/null 2>&1; then
    dnf -q makecache
    break
  fi
{{- end}}
done
args=()
for p in "${pinned[@]}"; do
  if [ -z "$want" ]; then
    args+=("$p")
    continue
  fi
  v=$(newest "$p" "$want")
  if [ -z "$v" ]; then
    echo "gpukit: no $p $want in the host's package sources" >&2
    exit 1
  fi
{{- if eq .Family.PackageManager "apt"}}
  args+=("$p=$v")
{{- else}}
  args+=("$p-$v")
{{- end}}
done
{{- if eq .Family.PackageManager "apt"}}
apt-mark unhold "${pinned[@]}" "${extra[@]}" >/dev/null 2>&1 || true
# Recommends are left out: Debian's docker.io recommends needrestart, which
# restarts services on its own.
apt-get install -y -q --no-install-recommends --allow-downgrades -o Dpkg::Options::=--force-confold \
  "${args[@]}" "${extra[@]}"
apt-mark hold "${pinned[@]}" "${extra[@]}" >/dev/null
{{- else}}
# A host without GPU never ran the driver's script, which installs the plugin.
if ! rpm -q python3-dnf-plugin-versionlock >/dev/null 2>&1; then dnf install -y -q python3-dnf-plugin-versionlock; fi
dnf -q versionlock delete "${pinned[@]}" "${extra[@]}" >/dev/null 2>&1 || true
dnf install -y -q "${args[@]}" "${extra[@]}"
dnf -q versionlock add "${pinned[@]}" "${extra[@]}"
{{- end}}
systemctl enable -q --now docker
docker version --format 'gpukit: docker engine {{"{{.Server.Version}}"}}'
