set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Prints what the swarm layer looks at, as key=value lines; changes nothing:
# the Docker packages (version, held), the service, daemon.json and the NVIDIA
# runtime's configuration (base64), the originals gpukit kept of them, and
# the node's swarm membership (JSON, base64).
kv() { printf '%s=%s\n' "$1" "$2"; }
pkgs=(docker-ce docker-ce-cli containerd.io)
held=" $(apt-mark showhold 2>/dev/null | tr '\n' ' ') "
for p in "${pkgs[@]}"; do
  v=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$p" 2>/dev/null || true)
  case $v in ?i*) ;; *) continue ;; esac # installed (ii, or hi when held)
  h=false
  case $held in *" $p "*) h=true ;; esac
  kv package "$p ${v##* } $h"
done
kv docker.active "$(systemctl is-active docker 2>/dev/null || true)"
for f in /etc/docker/daemon.json /etc/nvidia-container-runtime/config.toml /etc/docker/certs.d/*/gpukit-mirror-ca.crt; do
  if [ -f "$f" ]; then kv "file $f" "$(base64 -w0 <"$f")"; fi
done
for f in /var/lib/gpukit/swarm/originals/*; do
  if [ -e "$f" ]; then kv backup "${f##*/}"; fi
done
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  kv swarm "$(docker info --format '{{json .Swarm}}' | base64 -w0)"
fi
