set -euo pipefail
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
# Installs the NVIDIA driver at the wanted version (580.95.05: a release, or
# the newest of a branch), then holds every package of it, and keeps
# unattended upgrades away from it: a driver that changes under a running
# module gives "Driver/library version mismatch" until the next reboot.
# Only gpukit (gpukit upgrade driver) moves it.
# newest PKG WANT: the newest version of PKG whose upstream version is WANT
# (a release, 580.95.05) or starts with it (a branch, 580), empty if none;
# the package index is refreshed once if nothing matches.
newest() {
  local v
  v=$(candidates "$1" "$2")
  if [ -z "$v" ] && [ -z "${refreshed:-}" ]; then
    refreshed=1
    apt-get update -q >&2
    v=$(candidates "$1" "$2")
  fi
  printf '%s' "$v"
}
candidates() {
  apt-cache madison "$1" 2>/dev/null | awk -F'|' -v want="$2" '
    { v = $2; gsub(/ /, "", v); u = v; sub(/^[0-9]+:/, "", u) }
    index(u, want "-") == 1 || index(u, want ".") == 1 { print v; exit }'
}
want=580.95.05
pkgs=(nvidia-open)
# A run that failed half-way (a DKMS build that did not finish) left
# packages unconfigured: finish them first, or apt refuses to go on.
dpkg --configure -a
args=()
for p in "${pkgs[@]}"; do
  v=$(newest "$p" "$want")
  if [ -z "$v" ]; then
    echo "gpukit: no version $want of $p in this host's package sources (available: $(apt-cache madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); printf "%s ", $2}'))" >&2
    exit 3
  fi
  args+=("$p=$v")
done
drv=${args[0]#*=}
drv=${drv#*:}
drv=${drv%%-*}
# Pin every package of the driver to this release: apt resolves dependencies
# with the newest versions of the repository otherwise, and a repository
# holds several releases of the driver (what NVIDIA's pinning packages do).
re=${drv//./\\.}
cat >/etc/apt/preferences.d/gpukit-nvidia-driver <<PIN
# Written by gpukit: the NVIDIA driver stays at $drv; gpukit upgrade driver moves it.
Package: nvidia-* libnvidia-* libcuda* firmware-nvidia-* xserver-xorg-video-nvidia* cuda-drivers*
Pin: version /^([0-9]+:)?$re-/
Pin-Priority: 1001
PIN
# Unhold what an earlier run held (the container toolkit's own packages
# aside), so that apt may move it to the wanted version, and name it in the
# install: packages the driver only recommends (nvidia-persistenced) must
# follow the driver too, or they refuse to run with the new module. The pin
# above gives them this release where the repository has it.
mapfile -t held < <(apt-mark showhold | grep -E '^(nvidia-|libnvidia-|libcuda|firmware-nvidia-|xserver-xorg-video-nvidia)' |
  grep -Ev '^(nvidia-container-|libnvidia-container)' || true)
if [ ${#held[@]} -gt 0 ]; then
  apt-mark unhold "${held[@]}" >/dev/null
  args+=("${held[@]}")
fi
apt-get install -y -q --no-install-recommends --allow-downgrades -o Dpkg::Options::=--force-confold "${args[@]}"
# Hold every installed package of this driver release.
mapfile -t mine < <(dpkg-query -W -f='${Package} ${Version} ${db:Status-Status}\n' \
  'nvidia-*' 'libnvidia-*' 'libcuda*' 'firmware-nvidia-*' 'xserver-xorg-video-nvidia*' 2>/dev/null |
  awk -v d="$drv" '$3 == "installed" { u = $2; sub(/^[0-9]+:/, "", u); if (index(u, d) == 1) print $1 }')
apt-mark hold "${mine[@]}" >/dev/null
echo "gpukit: held ${#mine[@]} packages of driver $drv"
cat >/etc/apt/apt.conf.d/51gpukit-nvidia <<'CONF'
// Written by gpukit. The NVIDIA driver changes only through `gpukit upgrade
// driver`: an unattended upgrade would leave the running kernel module and the
// new libraries apart ("Driver/library version mismatch").
Unattended-Upgrade::Package-Blacklist {
    "nvidia-";
    "libnvidia-";
    "libcuda";
    "cuda-drivers";
    "firmware-nvidia-";
    "xserver-xorg-video-nvidia";
};
CONF
# The kernel module on disk is now this release; the one in memory changes at
# the next boot, which nvidia/reboot decides on.
mkdir -p /run/gpukit
loaded=$(cat /sys/module/nvidia/version 2>/dev/null || true)
if [ -z "$loaded" ] && [ ! -d /sys/module/nouveau ]; then
  # No driver in memory and nothing in the way: load the new one now
  # instead of rebooting.
  if modprobe nvidia 2>/dev/null; then loaded=$(cat /sys/module/nvidia/version 2>/dev/null || true); fi
fi
if [ "$loaded" != "$drv" ]; then
  echo "gpukit: driver ${loaded:-none} loaded, $drv installed: the host reboots"
  echo "driver ${loaded:-none} loaded, $drv installed" >>/run/gpukit/reboot-required
fi
