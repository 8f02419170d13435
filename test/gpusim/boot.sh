#!/bin/sh
# gpukit GPU SIMULATOR (test/gpusim, test only): the "hardware" of a lab host with simulated
# GPUs, set up at every boot by gpusim-boot.service before anything looks at it.
#
# The lab host's /sys is the machine's (read-only) and its /proc/driver too: this covers
# /sys/bus/pci/devices, /sys/module and /proc/driver with tmpfs mounts that show the real
# entries (symlinks into private bind mounts of the originals under /run/gpusim/real) plus the
# simulated ones:
#   - the GPUs of the host's capture and its NVSwitches as PCI devices (vendor 0x10de), from
#     /usr/share/gpusim/pci (written by gpusim.InstallHardware);
#   - the nvidia kernel module "loaded" at the version that was installed when the host booted
#     (/var/lib/gpusim/installed-driver, from the stand-in DKMS packages), unless nouveau holds
#     the GPUs; it changes only at the next boot, as a real module does;
#   - nouveau loaded when hardware.conf says nouveau=yes and nothing blacklists it at boot.
# The host has its own mount namespace (systemd-nspawn): nothing here reaches the machine.
# Run again in the same boot (gpusim.InstallHardware), it keeps what is "in memory".
# The paths are test/gpusim/hoststate's (Go): /etc/gpusim/hardware.conf is HardwareFile,
# /var/lib/gpusim/installed-driver InstalledDriverFile, /sys/module/nvidia/version
# LoadedDriverFile, /run/gpusim/loaded-flavor LoadedFlavorFile.
set -eu
conf=/etc/gpusim/hardware.conf
state=/run/gpusim
real=$state/real
setting() { sed -n "s/^$1=//p" "$conf" 2>/dev/null | tail -n 1; }

mkdir -p "$state" "$real"
if [ ! -e "$state/booted" ]; then
	nouveau=no
	if [ "$(setting nouveau)" = yes ] &&
		! grep -qsE '^[[:space:]]*blacklist[[:space:]]+nouveau' /etc/modprobe.d/*.conf /usr/lib/modprobe.d/*.conf; then
		nouveau=yes
	fi
	loaded='' flavor=''
	if [ "$nouveau" = no ] && [ -s /var/lib/gpusim/installed-driver ]; then
		read -r loaded flavor </var/lib/gpusim/installed-driver || true
	fi
	echo "$nouveau" >"$state/nouveau"
	echo "$loaded" >"$state/loaded-version"
	echo "$flavor" >"$state/loaded-flavor"
	: >"$state/booted"
fi
nouveau=$(cat "$state/nouveau")
loaded=$(cat "$state/loaded-version")
flavor=$(cat "$state/loaded-flavor")
simulated=$(ls /usr/share/gpusim/pci 2>/dev/null || true)

# cover DIR NAME HIDE: a tmpfs over DIR showing DIR's real entries but those matching the
# shell pattern HIDE (which the simulation decides on).
cover() {
	dir=$1 keep=$real/$2 hide=$3
	while [ "$(findmnt -n -o SOURCE --mountpoint "$dir" 2>/dev/null | tail -n 1)" = "gpusim-$2" ]; do umount "$dir"; done
	if ! mountpoint -q "$keep"; then
		mkdir -p "$keep"
		mount --bind "$dir" "$keep"
		# private: the tmpfs over DIR must not show up here too (DIR's mount is shared)
		mount --make-private "$keep"
	fi
	mount -t tmpfs -o mode=755,size=4m "gpusim-$2" "$dir"
	for e in "$keep"/* "$keep"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		name=${e##*/}
		# shellcheck disable=SC2254 # HIDE is a pattern
		case $name in $hide) continue ;; esac
		for s in $simulated; do if [ "$name" = "$s" ]; then continue 2; fi; done
		if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$dir/$name"; else ln -s "$e" "$dir/$name"; fi
	done
}

# PCI devices: the simulated GPUs and NVSwitches, bound to the driver that holds them.
cover /sys/bus/pci/devices pci-devices '__none__'
for addr in $simulated; do
	d=/sys/bus/pci/devices/$addr
	cp -a "/usr/share/gpusim/pci/$addr" "$d"
	drv=
	if [ "$(cat "$d/class")" = 0x068000 ]; then
		if [ -n "$loaded" ]; then drv=nvidia-nvswitch; fi
	elif [ -n "$loaded" ]; then
		drv=nvidia
	elif [ "$nouveau" = yes ]; then
		drv=nouveau
	fi
	if [ -n "$drv" ]; then ln -s "../../../bus/pci/drivers/$drv" "$d/driver"; fi
done

# Kernel modules.
cover /sys/module module 'nvidia*|nouveau'
if [ -n "$loaded" ]; then
	mkdir -p /sys/module/nvidia/parameters
	echo "$loaded" >/sys/module/nvidia/version
	echo live >/sys/module/nvidia/initstate
	echo 0 >/sys/module/nvidia/refcnt
	echo OE >/sys/module/nvidia/taint
	echo "gpukit GPU SIMULATOR: this module is simulated ($flavor kernel modules)" >/sys/module/nvidia/gpusim
fi
if [ "$nouveau" = yes ]; then
	mkdir -p /sys/module/nouveau/parameters
	echo live >/sys/module/nouveau/initstate
	echo 0 >/sys/module/nouveau/refcnt
	echo "gpukit GPU SIMULATOR: this module is simulated" >/sys/module/nouveau/gpusim
fi

# /proc/driver: what the loaded driver shows there.
if [ -d /proc/driver ]; then cover /proc/driver proc-driver 'nvidia*'; fi
if [ -n "$loaded" ] && [ -d /proc/driver ]; then
	mkdir -p /proc/driver/nvidia/gpus
	kind="UNIX Open Kernel Module for $(uname -m)"
	if [ "$flavor" = proprietary ]; then kind="UNIX $(uname -m) Kernel Module"; fi
	printf 'NVRM version: NVIDIA %s  %s  Release Build  (gpukit GPU SIMULATOR stand-in)\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n' \
		"$kind" "$loaded" >/proc/driver/nvidia/version
	for g in /usr/share/gpusim/gpus/*; do
		[ -d "$g" ] && cp -a "$g" /proc/driver/nvidia/gpus/
	done
	switches=''
	for addr in $simulated; do
		if [ "$(cat "/sys/bus/pci/devices/$addr/class")" = 0x068000 ]; then switches="$switches $addr"; fi
	done
	if [ -n "$switches" ]; then
		mkdir -p /proc/driver/nvidia-nvswitch/devices
		for addr in $switches; do mkdir -p "/proc/driver/nvidia-nvswitch/devices/$addr"; done
	fi
fi
echo "gpukit GPU SIMULATOR: $(echo "$simulated" | wc -w) simulated PCI devices; nvidia module ${loaded:-not loaded}${flavor:+ ($flavor)}; nouveau ${nouveau}"
