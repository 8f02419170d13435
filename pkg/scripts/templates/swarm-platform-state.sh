# Prints what the swarm platform's phases look at, as key=value lines, on
# the first manager; changes nothing: this node's ID, each gpukit stack's
# services (replicas running/wanted, the stack digest gpukit labelled them
# with, whether an update is under way), the sha256 of the Grafana
# password file (never the password) and the ingress certificate (public;
# gpukit's when its mark is beside it, else the operator's own).
kv() { printf '%s=%s\n' "$1" "$2"; }
dir={{quote .Dir}}
kv node "$(docker info --format '{{"{{.Swarm.NodeID}}"}}')"
mapfile -t ids < <(docker service ls -q --filter label=dev.gpukit.stack-digest)
if [ "${#ids[@]}" -gt 0 ]; then
  docker service inspect --format '{{"{{.Spec.Name}} {{index .Spec.Labels \"dev.gpukit.stack-digest\"}} {{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}"}}' "${ids[@]}" |
    while read -r name digest update; do kv "digest $name" "$digest ${update:-none}"; done
  docker service ls --filter label=dev.gpukit.stack-digest --format '{{"{{.Name}} {{.Replicas}}"}}' |
    while read -r name replicas _; do kv "replicas $name" "$replicas"; done
fi
if [ -s "$dir/{{.PasswordFile}}" ]; then kv password.sha256 "$(sha256sum <"$dir/{{.PasswordFile}}" | cut -d' ' -f1)"; fi
if [ -s "$dir/{{.CertFile}}" ] && [ -s "$dir/{{.KeyFile}}" ]; then
  kv ingress.crt "$(base64 -w0 <"$dir/{{.CertFile}}")"
  if [ -e "$dir/{{.CertFile}}.gpukit" ]; then kv ingress.gpukit yes; fi
fi
