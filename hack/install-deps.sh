#!/usr/bin/env bash
# Installs what building, testing and the local lab need on Debian/Ubuntu (as root).
# Idempotent: packages already present are not reinstalled.
set -euo pipefail

pkgs=(
  make git ca-certificates
  debootstrap systemd-container iproute2 util-linux   # the lab: base image, full hosts, netns
  openssh-client sshpass                               # lab assertions, password-auth tests
  dpkg-dev python3                                     # the lab's local apt repository
  gnupg                                                # the GPU simulator's signed stand-in repositories (test/gpusim)
  apt-cacher-ng                                        # the lab's Debian package proxy
  tmux                                                 # real-terminal test of the TUI
  shellcheck                                           # lint of rendered scripts
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
  # The lab runs an apt-cacher-ng of its own (test/lab/lab.sh, on the lab bridge only); the
  # package's machine-wide service would be an open proxy on *:3142. Installed here: kept off.
  if [[ " ${missing[*]} " == *" apt-cacher-ng "* ]]; then
    if [ -d /run/systemd/system ]; then
      systemctl disable --now apt-cacher-ng.service >/dev/null 2>&1 || true
    else
      update-rc.d apt-cacher-ng disable >/dev/null 2>&1 || true
      /etc/init.d/apt-cacher-ng stop >/dev/null 2>&1 || true
    fi
  fi
fi

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH=/usr/local/go/bin:$PATH
fi
need=$(sed -n 's/^go //p' "$(dirname "$0")/../go.mod")
if ! command -v go >/dev/null 2>&1; then
  echo "install-deps: Go $need or newer is required (https://go.dev/dl/); put it on PATH" >&2
  exit 1
fi
echo "install-deps: ok ($(go version))"
