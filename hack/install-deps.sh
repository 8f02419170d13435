#!/usr/bin/env bash
# Installs what building, testing and the local lab need on Debian/Ubuntu (as root).
# Idempotent: packages already present are not reinstalled.
set -euo pipefail

pkgs=(
  make git ca-certificates
  gnupg                                                # the GPU simulator's signed stand-in repositories (test/gpusim)
  tmux                                                 # real-terminal test of the TUI
  shellcheck                                           # lint of rendered scripts
  gcc libc6-dev pkg-config libseccomp-dev              # runc for the lab's Kubernetes hosts (cgo + seccomp: test/k8s/build.sh runtime)
  iptables                                             # kube-proxy's image carries this machine's iptables (test/cluster)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: need root to install: ${missing[*]}" >&2
    exit 1
  fi
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# The lab's packages (debootstrap, systemd-container, openssh-client, sshpass, dpkg-dev, python3,
# iproute2, apt-cacher-ng for its Debian package proxy, docker-registry and skopeo for its image
# registry, ...): lab.sh deps installs what is
# missing (without root it only checks), and keeps the machine-wide service of the apt-cacher-ng
# it installs off.
"$(dirname "$0")/../test/lab/lab.sh" deps

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH=/usr/local/go/bin:$PATH
fi
need=$(sed -n 's/^go //p' "$(dirname "$0")/../go.mod")
if ! command -v go >/dev/null 2>&1; then
  echo "install-deps: Go $need or newer is required (https://go.dev/dl/); put it on PATH" >&2
  exit 1
fi
echo "install-deps: ok ($(go version))"
