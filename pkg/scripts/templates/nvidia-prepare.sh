# Prepares a host for the NVIDIA driver: kernel headers and build tools for
# the RUNNING kernel (DKMS builds the module against them; headers of another
# kernel give a module that does not load after boot), and nouveau kept away
# from the GPUs. Each step checks before it changes.
{{template "pm"}}
k=$(uname -r)
mkdir -p /run/gpukit
{{- if .Headers}}
if [ ! -e "/lib/modules/$k/build" ]; then
{{- if eq .Family.PackageManager "apt"}}
  apt-get update -q
  if ! apt-cache show "linux-headers-$k" >/dev/null 2>&1; then
    echo "gpukit: no kernel headers for the running kernel $k: no package linux-headers-$k in this host's package sources." >&2
    echo "gpukit: DKMS would build the driver for another kernel, and it would not load after boot. Add a source that has linux-headers-$k, or upgrade to a kernel your sources have headers for and reboot, then run gpukit again." >&2
    exit 3
  fi
  apt-get install -y -q --no-install-recommends "linux-headers-$k"
{{- else}}
  if ! dnf -q list --available "kernel-devel-$k" >/dev/null 2>&1 && ! rpm -q "kernel-devel-$k" >/dev/null 2>&1; then
    echo "gpukit: no kernel headers for the running kernel $k: no package kernel-devel-$k in this host's repositories." >&2
    echo "gpukit: DKMS would build the driver for another kernel, and it would not load after boot. Update the kernel (dnf update kernel) and reboot, then run gpukit again." >&2
    exit 3
  fi
  dnf install -y -q "kernel-devel-$k" "kernel-headers-$k"
{{- end}}
fi
{{- if eq .Family.PackageManager "apt"}}
if ! dpkg-query -W -f='${db:Status-Status}' dkms 2>/dev/null | grep -qx installed; then
  if ! apt-cache show dkms >/dev/null 2>&1; then apt-get update -q; fi
  apt-get install -y -q --no-install-recommends dkms build-essential
fi
{{- else}}
if ! rpm -q dkms >/dev/null 2>&1; then
  # DKMS comes from EPEL; CRB (9) / PowerTools (8) carry its build dependencies.
  dnf config-manager --set-enabled {{if eq .Family.Family "rhel-8"}}powertools{{else}}crb{{end}} 2>/dev/null || true
  dnf install -y -q dkms gcc make elfutils-libelf-devel
fi
{{- end}}
{{- end}}

{{template "put"}}
conf=/etc/modprobe.d/blacklist-nouveau.conf
if put "$conf" $'blacklist nouveau\noptions nouveau modeset=0'; then
  echo "gpukit: nouveau blacklisted in $conf"
  # The initramfs may load nouveau before the root file system is mounted.
{{- if eq .Family.PackageManager "apt"}}
  if command -v update-initramfs >/dev/null 2>&1; then update-initramfs -u; fi
{{- else}}
  if command -v dracut >/dev/null 2>&1; then dracut --force; fi
{{- end}}
fi
if [ -d /sys/module/nouveau ]; then
  echo "gpukit: nouveau is loaded; the host reboots after the driver is installed"
  echo nouveau >>/run/gpukit/reboot-required
fi
