# Installs the NVIDIA driver at the wanted version ({{.Version}}: a release, or
# the newest of a branch), then holds every package of it, and keeps
# unattended upgrades away from it: a driver that changes under a running
# module gives "Driver/library version mismatch" until the next reboot.
# Only gpukit (gpukit upgrade driver) moves it.
{{template "pm"}}
{{template "pkgver" .}}
want={{quote .Version}}
pkgs=({{quoteEach .Packages}})
{{- if eq .Family.PackageManager "apt"}}
# The first package decides the release (the newest of a branch); the
# others are taken at exactly that release, so that the set fits together
# (a security update may carry some of the driver's packages and not others).
args=()
for p in "${pkgs[@]}"; do
  v=$(newest "$p" "${drv:-$want}")
  if [ -z "$v" ]; then
    echo "gpukit: no version ${drv:-$want} of $p in this host's package sources (available: $(apt-cache madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); printf "%s ", $2}'))" >&2
    exit 3
  fi
  args+=("$p=$v")
  if [ -z "${drv:-}" ]; then
    drv=${v#*:}
    drv=${drv%%-*}
  fi
done
# Pin every package of this release (every package whose version is the
# release's - only the driver's are): apt resolves dependencies with the
# newest versions of the repository otherwise, and a repository holds several
# releases of the driver, or a security update of some of its packages (what
# NVIDIA's pinning packages do, for any package name of any packaging).
re=${drv//./\\.}
cat >/etc/apt/preferences.d/gpukit-nvidia-driver <<PIN
# Written by gpukit: the NVIDIA driver stays at $drv; gpukit upgrade driver moves it.
Package: /^[a-z0-9]/
Pin: version /^([0-9]+:)?$re-/
Pin-Priority: 1001
PIN
# What is held at the release gpukit installed before is unheld and named in
# the install, so that it follows - packages the driver only recommends, such
# as nvidia-persistenced, too; the pin gives each this release where there is
# one. Found by release, not by name: packagings name their packages apart.
mkdir -p /var/lib/gpukit
state=/var/lib/gpukit/nvidia-driver.release
at_release() { # at_release RELEASE: the installed packages of that release
  dpkg-query -W -f='${Package} ${Version} ${db:Status-Status}\n' |
    awk -v d="$1" '$3 == "installed" { u = $2; sub(/^[0-9]+:/, "", u); if (index(u, d "-") == 1) print $1 }'
}
held=()
if [ -s "$state" ]; then
  mapfile -t held < <(sort <(apt-mark showhold | sort -u) <(at_release "$(cat "$state")" | sort -u) | uniq -d)
fi
if [ ${#held[@]} -gt 0 ]; then
  apt-mark unhold "${held[@]}" >/dev/null
  for p in "${held[@]}"; do
    case " ${pkgs[*]} " in *" $p "*) ;; *) args+=("$p") ;; esac
  done
fi
apt-get install -y -q --no-install-recommends --allow-downgrades "${args[@]}"
# Hold every installed package of this release, and remember the release.
mapfile -t mine < <(at_release "$drv")
apt-mark hold "${mine[@]}" >/dev/null
printf '%s\n' "$drv" >"$state"
echo "gpukit: held ${#mine[@]} packages of driver $drv"
cat >/etc/apt/apt.conf.d/51gpukit-nvidia <<'CONF'
// Written by gpukit. The NVIDIA driver changes only through `gpukit upgrade
// driver`: an unattended upgrade would leave the running kernel module and the
// new libraries apart ("Driver/library version mismatch").
Unattended-Upgrade::Package-Blacklist {
    "nvidia-";
    "libnvidia-";
    "libcuda";
    "libnvcuvid";
    "libnvoptix";
    "lib(gl1|egl|gles|glx|glvnd0)-nvidia";
    "cuda-drivers";
    "firmware-nvidia-";
    "xserver-xorg-video-nvidia";
};
CONF
{{- else}}
# The module stream pins the branch and the module flavor.
stream={{quote .Stream}}
if ! dnf -q module list --enabled nvidia-driver 2>/dev/null | grep -q "^nvidia-driver *$stream "; then
  dnf -y -q module reset nvidia-driver
  dnf -y -q module enable "nvidia-driver:$stream"
fi
args=()
for p in "${pkgs[@]}"; do
  v=$(newest "$p" "${drv:-$want}")
  if [ -z "$v" ]; then
    echo "gpukit: no version ${drv:-$want} of $p in this host's repositories" >&2
    exit 3
  fi
  args+=("$p-$v")
  if [ -z "${drv:-}" ]; then
    drv=${v#*:}
    drv=${drv%%-*}
  fi
done
if ! rpm -q python3-dnf-plugin-versionlock >/dev/null 2>&1; then dnf install -y -q python3-dnf-plugin-versionlock; fi
dnf -q versionlock delete 'nvidia-*' 'libnvidia-*' 'kmod-nvidia-*' 'cuda-drivers*' >/dev/null 2>&1 || true
dnf install -y -q --allowerasing "${args[@]}"
mapfile -t mine < <(rpm -qa --qf '%{NAME}-%{EPOCH}:%{VERSION}-%{RELEASE}.%{ARCH}\n' 'nvidia*' 'libnvidia*' 'kmod-nvidia*' 'cuda-drivers*' |
  sed 's/-(none):/-0:/' | grep -F -- "$drv")
dnf -q versionlock add "${mine[@]}"
echo "gpukit: locked ${#mine[@]} packages of driver $drv"
{{- end}}
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
