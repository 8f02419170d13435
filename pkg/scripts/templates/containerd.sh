# Installs containerd from {{if eq .Source "docker"}}Docker's repository (containerd.io{{if .Version}} {{.Version}}{{end}}){{else}}the distribution's packages{{end}},
# holds it against upgrades and links the distribution's CNI plugins into
# /opt/cni/bin (where CNIs look for them; a plugin already there stays).
# gpukit configures containerd next (containerd-config.sh).
{{template "pm"}}
{{template "put"}}
{{template "pkgver" .}}
{{- if eq .Source "docker"}}
{{template "dockerrepo" .}}
{{- end}}
{{template "pinned" .}}
mkdir -p /opt/cni/bin
for p in {{quote .CNIDir}}/*; do
  if [ -f "$p" ] && [ ! -e "/opt/cni/bin/${p##*/}" ]; then ln -s "$p" "/opt/cni/bin/${p##*/}"; fi
done
