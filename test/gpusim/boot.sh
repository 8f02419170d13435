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
#
# `boot load MODULE` and `boot unload MODULE` are modprobe's install and remove commands for the
# simulated modules (nvidia, nvidia_uvm, nvidia_modeset, nvidia_drm) on a host whose hardware.conf
# says modules=runtime, as a real host whose DKMS module is on disk: unloading is refused while
# another module depends on it, a process computes on the GPUs (/etc/gpusim/compute-apps), the
# persistence daemon runs or the fabric manager does (they hold /dev/nvidia*); loading takes the
# driver on disk (/var/lib/gpusim/installed-driver), and fails while nouveau holds the GPUs.
# modules=boot (the default) leaves the module to the boot: modprobe fails both ways.
# The paths are test/gpusim/hoststate's (Go): /etc/gpusim/hardware.conf is HardwareFile,
# /var/lib/gpusim/installed-driver InstalledDriverFile, /sys/module/nvidia/version
# LoadedDriverFile, /run/gpusim/loaded-flavor LoadedFlavorFile.
set -eu
conf=/etc/gpusim/hardware.conf
state=/run/gpusim
real=$state/real
setting() { sed -n "s/^$1=//p" "$conf" 2>/dev/null | tail -n 1; }

mkdir -p "$state" "$real"
action=${1:-boot}
# deps MODULE: the simulated modules it needs loaded.
deps() {
	case $1 in
	nvidia_uvm | nvidia_modeset) echo nvidia ;;
	nvidia_drm) echo nvidia_modeset ;;
	esac
}
loaded_modules() { cat "$state/modules" 2>/dev/null || true; }
has_module() { case " $(loaded_modules) " in *" $1 "*) return 0 ;; esac; return 1; }
if [ "$action" != boot ]; then
	module=$(echo "${2:-nvidia}" | tr - _)
	case $module in nvidia | nvidia_uvm | nvidia_modeset | nvidia_drm) ;; *)
		echo "gpukit GPU SIMULATOR: no simulated module $module" >&2
		exit 1
		;;
	esac
fi
case $action in
boot) ;;
load)
	if has_module "$module"; then exit 0; fi
	if [ "$(cat "$state/nouveau")" = yes ]; then
		echo "modprobe: ERROR: could not insert '$module': No such device (gpukit GPU SIMULATOR: nouveau holds the GPUs)" >&2
		exit 1
	fi
	installed='' iflavor=''
	if [ -s /var/lib/gpusim/installed-driver ]; then read -r installed iflavor </var/lib/gpusim/installed-driver || true; fi
	if [ -z "$installed" ]; then
		echo "modprobe: FATAL: Module $module not found in directory /lib/modules/$(uname -r) (gpukit GPU SIMULATOR: no driver installed)" >&2
		exit 1
	fi
	if [ "$module" != nvidia ]; then
		if ! has_module nvidia; then "$0" load nvidia; fi
		if [ "$(cat "$state/loaded-version")" != "$installed" ]; then
			echo "modprobe: ERROR: could not insert '$module': Invalid argument (gpukit GPU SIMULATOR: $module $installed disagrees about the symbols of nvidia $(cat "$state/loaded-version"))" >&2
			exit 1
		fi
		for d in $(deps "$module"); do if ! has_module "$d"; then "$0" load "$d"; fi; done
		echo "$(loaded_modules) $module" | xargs >"$state/modules.new"
		mv "$state/modules.new" "$state/modules"
	else
		echo "$installed" >"$state/loaded-version"
		echo "$iflavor" >"$state/loaded-flavor"
		echo nvidia >"$state/modules"
		# A module loaded afresh resets the GPUs: the stand-in nvidia-smi drops the MIG
		# instances and makes pending modes current when the state's boot is not this one.
		if [ -e /var/lib/gpusim/mig.json ]; then sed -i 's/"boot": *"[^"]*"/"boot": "module-loaded"/' /var/lib/gpusim/mig.json; fi
	fi
	;;
unload)
	if ! has_module "$module"; then
		echo "modprobe: FATAL: Module $module is not currently loaded" >&2
		exit 1
	fi
	why=''
	for m in $(loaded_modules); do
		if [ "$(deps "$m")" = "$module" ]; then why="$why used by $m;"; fi
	done
	case $module in nvidia | nvidia_uvm)
		if [ -s /etc/gpusim/compute-apps ]; then why="$why a process computes on the GPUs ($(cut -d, -f1,2 /etc/gpusim/compute-apps | tr '\n' ' '));"; fi
		;;
	esac
	if [ "$module" = nvidia ]; then
		pid=$(cat /run/nvidia-persistenced/nvidia-persistenced.pid 2>/dev/null || true)
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then why="$why held by nvidia-persistenced (pid $pid);"; fi
		if systemctl is-active --quiet nvidia-fabricmanager 2>/dev/null; then why="$why held by nvidia-fabricmanager;"; fi
	fi
	if [ -n "$why" ]; then
		echo "modprobe: FATAL: Module $module is in use. (gpukit GPU SIMULATOR:${why%;})" >&2
		exit 1
	fi
	rest=''
	for m in $(loaded_modules); do [ "$m" = "$module" ] || rest="$rest $m"; done
	echo "$rest" | xargs >"$state/modules"
	if [ "$module" = nvidia ]; then : >"$state/loaded-version" && : >"$state/loaded-flavor"; fi
	;;
*)
	echo "usage: boot [load|unload MODULE]" >&2
	exit 2
	;;
esac
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
	# What a GPU server's boot loads with the driver (udev and the driver's modprobe rules).
	if [ -n "$loaded" ]; then echo nvidia nvidia_uvm nvidia_modeset nvidia_drm >"$state/modules"; else : >"$state/modules"; fi
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

# Kernel modules, each with its holders (the loaded modules that need it) and its version.
cover /sys/module module 'nvidia*|nouveau'
modules=$(loaded_modules)
if [ -z "$loaded" ]; then modules=''; fi
for m in $modules; do
	mkdir -p "/sys/module/$m/parameters" "/sys/module/$m/holders"
	echo "$loaded" >"/sys/module/$m/version"
	echo live >"/sys/module/$m/initstate"
	echo OE >"/sys/module/$m/taint"
	echo "gpukit GPU SIMULATOR: this module is simulated ($flavor kernel modules)" >"/sys/module/$m/gpusim"
done
for m in $modules; do
	n=0
	for h in $modules; do
		if [ "$(deps "$h")" = "$m" ]; then ln -s "../../$h" "/sys/module/$m/holders/$h" && n=$((n + 1)); fi
	done
	echo "$n" >"/sys/module/$m/refcnt"
done
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
if [ "$action" = boot ]; then
	echo "gpukit GPU SIMULATOR: $(echo "$simulated" | wc -w) simulated PCI devices; nvidia module ${loaded:-not loaded}${flavor:+ ($flavor)}; nouveau ${nouveau}"
fi
