# Installs the Docker engine{{if .Version}} {{.Version}}{{end}} from
# {{if eq .Source "docker-ce"}}Docker's repository{{else}}the distribution's packages{{end}}, holds it against upgrades
# and starts it. A host that has it already is left as it is (gpukit checks
# the packages before it runs this).
{{template "pm"}}
{{template "put"}}
{{template "pkgver" .}}
{{- if eq .Source "docker-ce"}}
{{template "dockerrepo" .}}
{{- end}}
{{template "pinned" .}}
systemctl enable -q --now docker
docker version --format 'gpukit: docker engine {{"{{.Server.Version}}"}}'
