# {{if eq .Mode "check-remove"}}Says which proxy settings gpukit wrote are still on the host, one
# "pending: ..." line each, and changes nothing{{else if eq .Mode "check"}}Says which of the host's proxy settings differ from spec.proxy, one
# "pending: ..." line each, and changes nothing{{else if eq .Mode "remove"}}Removes the proxy settings gpukit wrote (gpukit reset){{else}}Points the host's package manager, services and
# gpukit's own downloads at the site's HTTP proxy{{end}}. gpukit's files:
# /etc/gpukit/proxy.env (sourced by gpukit's scripts for their downloads),
# {{if eq .Family.PackageManager "apt"}}/etc/apt/apt.conf.d/90gpukit-proxy{{else}}two marked lines in /etc/dnf/dnf.conf{{end}}, and a drop-in
# 90-gpukit-proxy.conf for each of {{join .Units ", "}}. A running
# service takes its new environment by a restart, except dockerd while
# containers run on it (swarm has no live-restore: they would stop).
{{template "put"}}
env_file=/etc/gpukit/proxy.env
{{- if eq .Family.PackageManager "apt"}}
apt_file=/etc/apt/apt.conf.d/90gpukit-proxy
{{- else}}
dnf_conf=/etc/dnf/dnf.conf
dnf_mark='# gpukit: spec.proxy (gpukit reset removes the next line)'
{{- end}}
units=({{quoteEach .Units}})
dropin() { echo "/etc/systemd/system/$1.service.d/90-gpukit-proxy.conf"; }
# restart_if_running UNIT: a running service takes its new environment.
restart_if_running() {
  systemctl is-active -q "$1" 2>/dev/null || return 0
  if [ "$1" = docker ] && [ -n "$(docker ps -q 2>/dev/null | head -n 1)" ]; then
    echo "gpukit: dockerd keeps its old proxy environment until its next restart: containers run on it"
    return 0
  fi
  systemctl restart "$1"
  echo "gpukit: $1 restarted"
}
{{- if eq .Mode "check-remove"}}
if [ -e "$env_file" ]; then echo "pending: $env_file present"; fi
{{- if eq .Family.PackageManager "apt"}}
if [ -e "$apt_file" ]; then echo "pending: $apt_file present"; fi
{{- end}}
for u in "${units[@]}"; do
  f=$(dropin "$u")
  if [ -e "$f" ]; then echo "pending: $f present"; fi
done
{{- if eq .Family.PackageManager "dnf"}}
if grep -qxF "$dnf_mark" "$dnf_conf" 2>/dev/null; then echo "pending: proxy in $dnf_conf"; fi
{{- end}}
{{- else if eq .Mode "remove"}}
reload=
for u in "${units[@]}"; do
  f=$(dropin "$u")
  if [ -e "$f" ]; then
    rm -f -- "$f"
    rmdir --ignore-fail-on-non-empty "${f%/*}"
    echo "gpukit: $f removed"
    reload="$reload $u"
  fi
done
if [ -n "$reload" ]; then
  systemctl daemon-reload
  for u in $reload; do restart_if_running "$u"; done
fi
{{- if eq .Family.PackageManager "apt"}}
if [ -e "$apt_file" ]; then rm -f -- "$apt_file"; echo "gpukit: $apt_file removed"; fi
{{- else}}
if grep -qxF "$dnf_mark" "$dnf_conf" 2>/dev/null; then
  sed -i "\\|^$dnf_mark\$|{N;d}" "$dnf_conf"
  echo "gpukit: the proxy removed from $dnf_conf"
fi
{{- end}}
# last: the probe reads its presence as "gpukit's proxy settings are here"
if [ -e "$env_file" ]; then rm -f -- "$env_file"; echo "gpukit: $env_file removed"; fi
{{- else}}
env_text={{quote .EnvFile}}
{{- if eq .Family.PackageManager "apt"}}
apt_text={{quote .APTConf}}
{{- else}}
dnf_line={{quote .DNFLine}}
{{- end}}
unit_text={{quote .DropIn}}
{{- if eq .Mode "check"}}
if [ "$(cat "$env_file" 2>/dev/null)" != "$env_text" ]; then echo "pending: $env_file"; fi
{{- if eq .Family.PackageManager "apt"}}
if [ "$(cat "$apt_file" 2>/dev/null)" != "$apt_text" ]; then echo "pending: $apt_file"; fi
{{- else}}
if ! grep -qxF "$dnf_mark" "$dnf_conf" 2>/dev/null || ! grep -qxF "$dnf_line" "$dnf_conf"; then echo "pending: proxy in $dnf_conf"; fi
{{- end}}
for u in "${units[@]}"; do
  f=$(dropin "$u")
  if [ "$(cat "$f" 2>/dev/null)" != "$unit_text" ]; then echo "pending: $f"; fi
done
{{- else}}
if put "$env_file" "$env_text"; then chmod 0644 "$env_file"; echo "gpukit: $env_file written"; fi
{{- if eq .Family.PackageManager "apt"}}
if put "$apt_file" "$apt_text"; then echo "gpukit: $apt_file written"; fi
{{- else}}
if ! grep -qxF "$dnf_line" "$dnf_conf" 2>/dev/null; then
  if grep -qxF "$dnf_mark" "$dnf_conf" 2>/dev/null; then sed -i "\\|^$dnf_mark\$|{N;d}" "$dnf_conf"; fi
  if grep -q '^proxy[[:space:]]*=' "$dnf_conf" 2>/dev/null; then
    echo "gpukit: $dnf_conf sets a proxy of its own: remove it, or leave spec.proxy out for this host" >&2
    exit 2
  fi
  if grep -qx '\[main\]' "$dnf_conf" 2>/dev/null; then
    sed -i "/^\\[main\\]\$/a $dnf_mark\\n$dnf_line" "$dnf_conf"
  else
    printf '[main]\n%s\n%s\n' "$dnf_mark" "$dnf_line" >>"$dnf_conf"
  fi
  echo "gpukit: proxy set in $dnf_conf"
fi
{{- end}}
changed=
for u in "${units[@]}"; do
  f=$(dropin "$u")
  if put "$f" "$unit_text"; then
    echo "gpukit: $f written"
    changed="$changed $u"
  fi
done
if [ -n "$changed" ]; then
  systemctl daemon-reload
  for u in $changed; do restart_if_running "$u"; done
fi
{{- end}}
{{- end}}
