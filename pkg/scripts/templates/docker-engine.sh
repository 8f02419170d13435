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
{{template "pinned" .}}
systemctl enable -q --now docker
docker version --format 'gpukit: docker engine {{"{{.Server.Version}}"}}'
