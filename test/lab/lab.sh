#!/usr/bin/env bash
# lab.sh - gpukit's local lab: simulated baremetal hosts on one Linux machine (root only).
#
# A debootstrapped Debian 12 base is shared read-only through overlayfs; every host has its own
# network namespace on the private bridge gklab0 (10.251.0.1/16, exists only on this machine) and
# a real OpenSSH server. Full hosts boot systemd as PID 1 with systemd-nspawn; light hosts are
# own mount/uts/ipc/pid namespaces + pivot_root + `sshd -D` as PID 1 (a few MB each).
#
# Several labs may run at once (one per concurrent test package): each has an id N (1..127),
# state in $LAB/run/N, full hosts in 10.251.(2N).0/24, light hosts in 10.251.(2N+1).0/24, and
# host-side names (netns, veth, nspawn machine) prefixed gkN-. See README.md.
#
#   lab.sh [--lab ID] COMMAND ...   (or GPUKIT_LAB_ID=ID; default 1; "auto" = first free id, up only)
#   deps                    apt-get install what the lab needs (only what is missing; without root: check)
#   base                    build/refresh the shared base (cached in $LAB/base)
#   registry [push NAME:TAG DIR [ENTRYPOINT..]]  the lab's container registry (10.251.0.1:5000)
#   registry tls DIR        the same images over TLS with a login (10.251.0.1:5443; DIR: cert.pem,
#                           key.pem, htpasswd)
#   up [--light] N | NAME.. hosts lab-1..N (full) or lite-1..N (light); last line = inventory path
#                           (LAB_HOSTNAME_PREFIX=P: light hosts' hostnames are P + name, unique
#                           across labs for a fleet spanning several)
#                           --kube: full hosts made for Kubernetes nodes (see kube_host)
#                           --fabric: full hosts get a second NIC, eth1, on the fabric bridge
#                           (10.252.0.0/16, host to host only), like a GPU server's cluster network
#   stop NAME / start NAME  host down (powered off: no link) / back up with the same host key
#                           (start also ends a reboot delay early, and boots a host that is down/off)
#   reboot-delay NAME [SECONDS|never|default]  how long a full host stays down when it reboots
#                           (default GPUKIT_LAB_REBOOT_DELAY, else 3 s); no value: print it
#   state NAME              running, rebooting, down (rebooted, delay never), off (powered off
#                           from inside) or stopped
#   rekey NAME              new ssh host key, sshd reloaded; known_hosts NOT updated
#   ssh [USER@]NAME [CMD]   ssh with the lab key, known_hosts and StrictHostKeyChecking=yes
#   status                  labs, hosts, memory, bridge, repository
#   repo [DEB...]           local apt repository at http://10.251.0.1:8080/ (adds DEBs, reindexes)
#   debian-mirror [sources] Debian proxy for hosts (bookworm, -updates, -security, all components):
#                           prints its URLs, or a deb822 sources file; fails if the mirror is unreachable
#   proxy                   a site's HTTP proxy (squid) on the bridge: prints its URL and access log
#   direct off|on PORT..    this lab's hosts may not reach the bridge's PORTs directly (off) or may (on)
#   keep                    the lab outlives the test that started it (until release/down)
#   release                 tear down this lab only (and the bridge/repository if it was the last)
#   down                    tear down everything (every lab, bridge, repository, leftovers); keeps the base
# shellcheck disable=SC2031 # in_lab switches the lab in subshells on purpose
set -euo pipefail
shopt -s nullglob inherit_errexit

SELF=$(readlink -f "${BASH_SOURCE[0]}")
LAB=${GPUKIT_LAB_DIR:-/var/tmp/gpukit-lab}
BASE=$LAB/base/rootfs
KEY=$LAB/keys/id_ed25519
PASSWORD_FILE=$LAB/secrets/ops-password
BRIDGE=gklab0
BRIDGE_ADDR=10.251.0.1
# The fabric: a second network between full hosts made with --fabric (eth1), as the fast network
# of multi-NIC GPU servers whose SSH runs on a management network (eth0). This machine has no
# address on it: only the hosts talk there. Host N of lab L is FABRIC_NET.(2L).N.
FABRIC_BRIDGE=gklab1
FABRIC_NET=10.252
# A bridge takes the lowest MAC of its ports unless given one: every host leaving would change
# it, and every host's ARP entry for the bridge would point at a dead MAC for ~30-45 s.
BRIDGE_MAC=02:67:6b:6c:61:62
NET=10.251
REPO_PORT=8080
REPO_URL=http://$BRIDGE_ADDR:$REPO_PORT/
REPO_DIR=$LAB/repo
DEBIAN_PORT=3143
DEBIAN_URL=http://$BRIDGE_ADDR:$DEBIAN_PORT
DEBIAN_DIR=$LAB/debian-mirror
REGISTRY_PORT=5000
REGISTRY=$BRIDGE_ADDR:$REGISTRY_PORT
REGISTRY_DIR=$LAB/registry
SUITE=bookworm
BASE_PACKAGES=openssh-server,sudo,iproute2,systemd,systemd-sysv,dbus,ca-certificates,python3,pciutils,kmod,procps,util-linux
# cgroup subtree of the lab's full hosts; another name isolates a second lab machine (the sandbox
# in which lab_test.go checks `down`) from this one's labs.
CGROUP_NAME=${GPUKIT_LAB_CGROUP:-gpukit-lab}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf 'lab: %s\n' "$*" >&2; }
die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }
# Keep package mirror names out of every log the lab writes or prints.
scrub() { sed -E 's#[a-zA-Z][a-zA-Z0-9+.-]*://[^/ ]+#<mirror>#g'; }

# ---------------------------------------------------------------- labs, hosts, names
# use_lab ID: selects the lab every other function works on ("auto" only inside `up`).
use_lab() {
	ID=$1
	RUN=$LAB/run/$ID
	export GPUKIT_LAB_ID=$ID
}
check_id() { if ! [[ $ID =~ ^[1-9][0-9]*$ ]] || ((ID > 127)); then die "lab id must be 1..127, got '$ID'"; fi; }
in_lab() { # in_lab ID CMD...: CMD for another lab, in a subshell
	# shellcheck disable=SC2030 # the change of lab is meant to stay in the subshell
	(use_lab "$1" && shift && "$@")
}
check_name() { # check_name NAME: sets KIND (full|light) and IDX, or dies
	if [[ $1 =~ ^lab-([1-9][0-9]{0,2})$ ]]; then KIND=full
	elif [[ $1 =~ ^lite-([1-9][0-9]{0,2})$ ]]; then KIND=light
	else die "host names are lab-N (full) or lite-N (light), N in 1..254; got '$1'"; fi
	IDX=${BASH_REMATCH[1]}
	((IDX <= 254)) || die "host index $IDX > 254"
}
# host NAME: sets KIND, IDX, ADDR, NS (host-side netns/veth/machine name, <= 14 chars), HD
# (state dir) and M (its root) for this lab. Plain assignments: no subshell per lookup, which
# matters when 100+ hosts start at once on two cores.
host() {
	check_name "$1"
	if [ "$KIND" = full ]; then ADDR=$NET.$((2 * ID)).$IDX; else ADDR=$NET.$((2 * ID + 1)).$IDX; fi
	NS=gk$ID-$1
	HD=$RUN/hosts/$1
	M=$HD/merged
}
lab_hosts() { # names of this lab's hosts, full before light, by index
	local d
	for d in "$RUN"/hosts/*/; do d=${d%/}; printf '%s\n' "${d##*/}"; done | sort -t- -k1,1 -k2,2n
}

# ---------------------------------------------------------------- processes (pid files hold "pid starttime")
# proc_stat PID: sets PSTATE and PSTART (start time: a recycled pid has another one), or fails.
proc_stat() {
	local s f
	read -r s 2>/dev/null </proc/"$1"/stat || return 1
	s=${s##*) }
	read -r -a f <<<"$s"
	PSTATE=${f[0]} PSTART=${f[19]}
}
alive() { proc_stat "$1" && [ "$PSTATE" != Z ] && [ "$PSTATE" != X ]; } # a zombie is dead
write_pid() { proc_stat "$1" || PSTART=0; printf '%s %s\n' "$1" "$PSTART" >"$2"; }
# live_pid FILE: sets PID to the process recorded in FILE if it still runs, else fails.
live_pid() {
	local start
	PID=
	read -r PID start 2>/dev/null <"$1" || return 1
	if [ -n "$PID" ] && alive "$PID" && [ "$PSTART" = "$start" ]; then return 0; fi
	PID=
	return 1
}
nap() { # nap SECONDS: sleep without a process (a read that times out on a pipe nobody writes to)
	[ -n "${NAP_FD:-}" ] || exec {NAP_FD}<> <(:)
	read -rt "$1" -u "$NAP_FD" || true
}
wait_gone() { # wait_gone SECONDS PID...: until every PID is gone or time is up
	local end=$((SECONDS + $1)) p
	shift
	for p; do while alive "$p" && ((SECONDS < end)); do nap 0.1; done; done
}
# kill_matching TEXT: SIGKILL every process whose command line contains TEXT (never this
# script) and wait until they are gone (a pid namespace dies with its PID 1 within ~2 s).
kill_matching() {
	local p pids=()
	for p in $(ps -eo pid=,args= | awk -v s="$1" -v a=$$ -v b="$BASHPID" 'index($0, s) && $1 != a && $1 != b && $2 != "awk" {print $1}'); do
		kill -KILL "$p" 2>/dev/null && pids+=("$p")
	done
	if ((${#pids[@]})); then wait_gone 10 "${pids[@]}"; fi
}
port_open() { # port_open ADDR PORT: one TCP connect, in this shell
	local fd
	if exec {fd}<>"/dev/tcp/$1/$2"; then exec {fd}>&-; return 0; fi 2>/dev/null
	return 1
}
wait_tcp() { # wait_tcp SECONDS ADDR PORT
	local end=$((SECONDS + $1))
	until port_open "$2" "$3"; do ((SECONDS < end)) || return 1; nap 0.1; done
}

# ---------------------------------------------------------------- locking (shared state: base, bridge, repo, ids)
with_lock() {
	mkdir -p "$LAB"
	# GPUKIT_LAB_LOCK_HELD=1: the caller holds the lock already (a test that must release a lab
	# and check what is left before another lab can take its id)
	if [ "${GPUKIT_LAB_LOCK_HELD:-}" = 1 ]; then ("$@"); return; fi
	(
		flock -w 1200 9 || die "timed out waiting for $LAB/lock"
		"$@"
	) 9>"$LAB/lock"
}

# ---------------------------------------------------------------- dependencies
# cmd_deps: apt-get install what is missing (root). Without root it only checks: it fails naming
# what is missing (hack/install-deps.sh runs it either way).
cmd_deps() {
	local missing=() pair
	for pair in debootstrap:debootstrap systemd-nspawn:systemd-container ssh:openssh-client \
		ssh-keygen:openssh-client ssh-keyscan:openssh-client sshpass:sshpass \
		dpkg-scanpackages:dpkg-dev dpkg-deb:dpkg ip:iproute2 flock:util-linux unshare:util-linux \
		nsenter:util-linux pivot_root:util-linux mountpoint:util-linux ps:procps pgrep:procps \
		sysctl:procps gzip:gzip apt-cacher-ng:apt-cacher-ng setpriv:util-linux \
		docker-registry:docker-registry skopeo:skopeo sha256sum:coreutils squid:squid iptables:iptables; do
		command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
	done
	[ -x /usr/bin/python3 ] || missing+=(python3)
	[ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
	if ((${#missing[@]})); then
		mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
		[ "$(id -u)" = 0 ] || die "need root to install: ${missing[*]}"
		mkdir -p "$LAB"
		log "installing ${missing[*]}"
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; } 2>&1 |
			scrub >"$LAB/deps.log" || { tail -n 20 "$LAB/deps.log" >&2; die "apt-get install ${missing[*]} failed"; }
		# The lab runs an apt-cacher-ng of its own (debian_serve, on the lab bridge only); the
		# package's machine-wide service would be an open proxy on *:3142. Installed here: kept off.
		# The same for the registry (registry_serve runs the lab's, on the bridge only).
		if [[ " ${missing[*]} " == *" docker-registry "* ]]; then
			if [ -d /run/systemd/system ]; then systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
			else update-rc.d docker-registry disable >/dev/null 2>&1 || true; /etc/init.d/docker-registry stop >/dev/null 2>&1 || true; fi
		fi
		if [[ " ${missing[*]} " == *" squid "* ]]; then
			if [ -d /run/systemd/system ]; then systemctl disable --now squid.service >/dev/null 2>&1 || true
			else update-rc.d squid disable >/dev/null 2>&1 || true; /etc/init.d/squid stop >/dev/null 2>&1 || true; fi
		fi
		if [[ " ${missing[*]} " == *" apt-cacher-ng "* ]]; then
			if [ -d /run/systemd/system ]; then systemctl disable --now apt-cacher-ng.service >/dev/null 2>&1 || true
			else update-rc.d apt-cacher-ng disable >/dev/null 2>&1 || true; /etc/init.d/apt-cacher-ng stop >/dev/null 2>&1 || true; fi
		fi
	fi
	[ "$(id -u)" = 0 ] || return 0 # overlayfs: a lab matter, and the lab runs as root
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || die "the kernel has no overlayfs"
}

# ---------------------------------------------------------------- base image
# apt_source_uri SUITES LINE: the first URI of this machine's apt sources: of the first stanza of
# /etc/apt/sources.list.d/debian.sources whose Suites match the awk regex SUITES, else of the first
# deb line of /etc/apt/sources.list that matches the awk regex LINE; nothing if none.
apt_source_uri() {
	local m=""
	[ -f /etc/apt/sources.list.d/debian.sources ] && m=$(awk -v re="$1" 'BEGIN { RS = "" }
		{ u = ""; s = ""; n = split($0, l, "\n")
		  for (i = 1; i <= n; i++) { if (l[i] ~ /^URIs:/) { split(l[i], f, " "); u = f[2] } if (l[i] ~ /^Suites:/) s = l[i] }
		  if (s ~ re && u != "") { print u; exit } }' /etc/apt/sources.list.d/debian.sources)
	[ -z "$m" ] && [ -f /etc/apt/sources.list ] && m=$(awk -v re="$2" '$1 == "deb" && $0 ~ re {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}}' /etc/apt/sources.list)
	printf '%s' "$m"
}
mirror() {
	if [ -n "${GPUKIT_LAB_MIRROR:-}" ]; then printf '%s' "$GPUKIT_LAB_MIRROR"; return; fi
	local m
	m=$(apt_source_uri '' debian)
	printf '%s' "${m:-http://deb.debian.org/debian}"
}

SSHD_LAB_CONF='# gpukit lab (test/lab/lab.sh). First value wins in sshd_config, and Debian includes
# sshd_config.d/*.conf at the top, so these override the defaults below it.
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
# hosts act as bastions (ssh -J)
AllowTcpForwarding yes
# 100+ parallel connections (fan-out benchmarks, one bastion for many hosts) must not be dropped
MaxStartups 1024
MaxSessions 256
UseDNS no'

# shellcheck disable=SC2016 # $$ is systemd's escape of $, for the unit file
CONTAINER_HOST_UNIT='# gpukit lab (test/lab/lab.sh): lets container engines run in this host, see configure_base
[Unit]
Description=gpukit lab: writable cgroup controllers and /proc/sys/net for container engines
DefaultDependencies=no
Before=sysinit.target docker.service containerd.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c "for c in /sys/fs/cgroup/*/; do if mountpoint -q $$c; then mount -o remount,bind,rw $$c; fi; done"
ExecStart=/bin/sh -c "mount --bind /proc/sys/net /proc/sys/net && mount -o remount,bind,rw /proc/sys/net"
# Kubernetes hosts (up --kube): the machine-wide sysctls kubelet sets are shown as files of this host
ExecStart=/bin/sh -c "for f in /etc/gpukit-lab/sysctl/*; do [ -f $$f ] || continue; mount --bind $$f /proc/sys/$$(basename $$f | tr . /); done"
[Install]
WantedBy=sysinit.target'

# configure_base: everything after debootstrap; idempotent, re-run when its stamp changes.
configure_base() {
	local R=$BASE u home pw
	chroot "$R" apt-get clean
	rm -rf "$R"/var/lib/apt/lists/*_* "$R"/var/cache/apt/*.bin "$R/var/log/bootstrap.log"
	rm -f "$R"/etc/ssh/ssh_host_* # every host gets its own
	rm -f "$R"/etc/apt/sources.list.d/*
	echo '# lab hosts reach no public mirror; gpukit configures the lab repository (spec.mirrors)' >"$R/etc/apt/sources.list"
	echo '# lab hosts have no DNS' >"$R/etc/resolv.conf"
	: >"$R/etc/machine-id" # every host gets its own
	echo localhost >"$R/etc/hostname"
	for u in deploy ops; do
		chroot "$R" id -u "$u" >/dev/null 2>&1 || chroot "$R" useradd -m -s /bin/bash -G sudo "$u"
	done
	echo 'deploy ALL=(ALL) NOPASSWD:ALL' >"$R/etc/sudoers.d/deploy" # ops keeps Debian's %sudo rule: sudo asks for the password
	chmod 440 "$R/etc/sudoers.d/deploy"
	pw=$(cat "$PASSWORD_FILE")
	printf 'ops:%s\n' "$pw" | chroot "$R" chpasswd
	for u in root deploy ops; do
		home=$(chroot "$R" getent passwd "$u" | cut -d: -f6)
		install -d -m 700 "$R$home/.ssh"
		install -m 600 "$KEY.pub" "$R$home/.ssh/authorized_keys"
		chroot "$R" chown -R "$u:" "$home/.ssh"
	done
	printf '%s\n' "$SSHD_LAB_CONF" >"$R/etc/ssh/sshd_config.d/50-gpukit-lab.conf"
	chroot "$R" systemctl enable -q systemd-networkd
	# Container engines (dockerd, containerd + runc) run in full hosts as on a machine. nspawn
	# mounts the cgroup v1 controllers read-only (runc: "mkdir /sys/fs/cgroup/cpuset/docker:
	# read-only file system") and /proc/sys read-only, net included, with a network namespace
	# given by path (dockerd: "Enabling IP forwarding failed"). The controllers show only this
	# host's cgroup (cgroup namespace) and /proc/sys/net only its network namespace, so making
	# them writable lets engines change this host alone. Light hosts have no systemd: no unit.
	printf '%s\n' "$CONTAINER_HOST_UNIT" >"$R/etc/systemd/system/gpukit-lab-container-host.service"
	chroot "$R" systemctl enable -q gpukit-lab-container-host.service
	# No console logins in containers; no timers that wake 100 hosts at once.
	chroot "$R" systemctl mask -q console-getty.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer \
		e2scrub_all.timer fstrim.timer 2>/dev/null || true
}
configure_stamp() { { declare -f configure_base; printf '%s\n' "$SSHD_LAB_CONF" "$CONTAINER_HOST_UNIT"; cat "$KEY.pub" "$PASSWORD_FILE"; } | sha256sum | cut -c1-16; }
debootstrap_stamp() { printf '%s %s\n' "$SUITE" "$BASE_PACKAGES" | sha256sum | cut -c1-16; }

umount_under() { # umount_under DIR...: every mount at or below a DIR, deepest first
	local t
	awk 'BEGIN { n = ARGC; ARGC = 1 }
		{ for (i = 1; i < n; i++) if ($2 == ARGV[i] || index($2, ARGV[i] "/") == 1) { print $2; next } }' "$@" </proc/mounts |
		sort -r | while read -r t; do umount "$t" 2>/dev/null || umount -l "$t" 2>/dev/null || true; done
}
labs_running() { local d; for d in "$LAB"/run/*/; do [ -d "$d" ] && return 0; done; return 1; }

base_locked() {
	mkdir -p "$LAB/base" "$LAB/keys" "$LAB/secrets"
	chmod 700 "$LAB/secrets" "$LAB/keys"
	[ -f "$KEY" ] || ssh-keygen -q -t ed25519 -N '' -C gpukit-lab -f "$KEY"
	if [ ! -s "$PASSWORD_FILE" ]; then # fixed for this lab dir, random per machine, never printed
		(umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >"$PASSWORD_FILE")
	fi
	local want have
	want=$(debootstrap_stamp)
	have=$(cat "$LAB/base/debootstrap.stamp" 2>/dev/null || true)
	if [ "$want" != "$have" ] || [ ! -x "$BASE/usr/sbin/sshd" ]; then
		labs_running && die "the base must be rebuilt but labs are running: run '$0 down' first"
		local new=$LAB/base/rootfs.new started=$SECONDS
		umount_under "$new"
		rm -rf --one-file-system "$new"
		log "debootstrap $SUITE (minbase + ${BASE_PACKAGES//,/ }) - about a minute, once"
		if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$new" "$(mirror)" 2>&1 | scrub >"$LAB/base/debootstrap.log"; then
			umount_under "$new"
			tail -n 20 "$LAB/base/debootstrap.log" >&2
			die "debootstrap failed (log: $LAB/base/debootstrap.log)"
		fi
		rm -rf --one-file-system "$BASE" "$LAB/base/configure.stamp"
		mv "$new" "$BASE"
		echo "$want" >"$LAB/base/debootstrap.stamp"
		log "base built in $((SECONDS - started)) s"
	fi
	want=$(configure_stamp)
	if [ "$want" != "$(cat "$LAB/base/configure.stamp" 2>/dev/null || true)" ]; then
		labs_running && die "the base configuration changed but labs are running: run '$0 down' first"
		configure_base
		echo "$want" >"$LAB/base/configure.stamp"
	fi
}
cmd_base() { cmd_deps; with_lock base_locked; }

# ---------------------------------------------------------------- bridge
bridge_up() {
	local other
	other=$(ip -o route show "$NET.0.0/16" | grep -v "dev $BRIDGE " || true)
	[ -z "$other" ] || die "$NET.0.0/16 is already routed elsewhere on this machine: $other"
	ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" address "$BRIDGE_MAC" type bridge
	sysctl -qw "net.ipv4.conf.$BRIDGE.arp_notify=1" # a MAC change below announces itself (gratuitous ARP)
	# One neighbour entry per lab host: the kernel's default table (at most 1024 entries) overflows
	# at about 1000 light hosts across labs ("neighbor table overflow"), and connections to hosts
	# whose entry was dropped fail as "no route to host" or time out. Raised, never lowered.
	local k v
	for k in 1:2048 2:8192 3:16384; do
		# Only the initial network namespace has these (the table's limits are global); a lab
		# started inside another namespace (the down test's sandbox) has nothing to raise.
		[ -e "/proc/sys/net/ipv4/neigh/default/gc_thresh${k%%:*}" ] || continue
		v=$(<"/proc/sys/net/ipv4/neigh/default/gc_thresh${k%%:*}")
		((v >= ${k#*:})) || sysctl -qw "net.ipv4.neigh.default.gc_thresh${k%%:*}=${k#*:}" ||
			log "warning: cannot raise the neighbour table (gc_thresh${k%%:*}=$v): fleets near 1000 hosts will lose ARP entries"
	done
	# Every full host's systemd, journald, kubelet, kube-proxy and containerd take inotify
	# instances from root's one budget on this machine (no user namespaces), 128 by default: with
	# a few labs up, a host's systemd fails to start ("Failed to create control group inotify
	# object: Too many open files") and kube-proxy crash-loops. Raised, never lowered.
	for k in max_user_instances:8192 max_user_watches:1048576; do
		[ -e "/proc/sys/fs/inotify/${k%%:*}" ] || continue
		v=$(<"/proc/sys/fs/inotify/${k%%:*}")
		((v >= ${k#*:})) || sysctl -qw "fs.inotify.${k%%:*}=${k#*:}" ||
			log "warning: cannot raise fs.inotify.${k%%:*} ($v): hosts of several labs may fail to start"
	done
	# (no `| grep -q` here or below: with pipefail, grep quitting early fails the pipeline by SIGPIPE)
	[[ $(ip link show "$BRIDGE") == *"link/ether $BRIDGE_MAC "* ]] || ip link set "$BRIDGE" address "$BRIDGE_MAC"
	[[ $(ip -o addr show dev "$BRIDGE") == *"inet $BRIDGE_ADDR/16 "* ]] || ip addr add "$BRIDGE_ADDR/16" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	ip link show "$FABRIC_BRIDGE" >/dev/null 2>&1 || ip link add "$FABRIC_BRIDGE" type bridge
	ip link set "$FABRIC_BRIDGE" up
	if [ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo 0)" = 1 ] &&
		[[ $'\n'$(iptables -S FORWARD 2>/dev/null || true) == *$'\n-P FORWARD DROP'* ]]; then # e.g. after dockerd started
		log "warning: br_netfilter + iptables FORWARD policy DROP: traffic between lab hosts is dropped"
	fi
	# `ip netns add` bind-mounts /run/netns onto itself the first time; do it once here, because
	# concurrent first calls would stack two mounts there.
	if ! mountpoint -q /run/netns; then ip netns add gk0-init && ip netns del gk0-init; fi
}

# ---------------------------------------------------------------- local apt repository
build_hello_package() {
	local b=$REPO_DIR/build/gpukit-lab-hello
	rm -rf "$b"
	mkdir -p "$b/DEBIAN" "$b/usr/bin"
	# shellcheck disable=SC2016 # $(hostname) expands on the lab host, not here
	printf '#!/bin/sh\necho "gpukit-lab-hello 1.0 on $(hostname)"\n' >"$b/usr/bin/gpukit-lab-hello"
	chmod 755 "$b/usr/bin/gpukit-lab-hello"
	cat >"$b/DEBIAN/control" <<EOF
Package: gpukit-lab-hello
Version: 1.0
Architecture: all
Maintainer: gpukit lab <lab@gpukit.invalid>
Section: misc
Priority: optional
Description: gpukit lab test package
 Installed by lab tests from the lab's local repository; prints a greeting.
EOF
	dpkg-deb --root-owner-group -Zgzip -b "$b" "$REPO_DIR/www/pool/gpukit-lab-hello_1.0_all.deb" >/dev/null
}
repo_index() { # the packages in pool/ only: other trees under www (the GPU simulator's) are repositories of their own
	local w=$REPO_DIR/www f
	(cd "$w" && dpkg-scanpackages --multiversion pool /dev/null 2>/dev/null >Packages && gzip -9kf Packages)
	{
		printf 'Origin: gpukit-lab\nLabel: gpukit-lab\nSuite: lab\nCodename: lab\nArchitectures: all amd64 arm64\n'
		printf 'Date: %s\nSHA256:\n' "$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
		for f in Packages Packages.gz; do printf ' %s %s %s\n' "$(sha256sum <"$w/$f" | cut -d' ' -f1)" "$(stat -c %s "$w/$f")" "$f"; done
	} >"$w/Release"
}
repo_serve() {
	if ! live_pid "$REPO_DIR/pid"; then
		# Bound to the bridge address only: reachable from lab hosts and this machine, nowhere else.
		setsid /usr/bin/python3 -m http.server "$REPO_PORT" --bind "$BRIDGE_ADDR" --directory "$REPO_DIR/www" \
			</dev/null >"$REPO_DIR/http.log" 2>&1 9>&- &
		write_pid $! "$REPO_DIR/pid"
	fi
	wait_tcp 10 "$BRIDGE_ADDR" "$REPO_PORT" || die "repository server did not start (log: $REPO_DIR/http.log)"
}
repo_ensure() { # repo_ensure [DEB...]
	mkdir -p "$REPO_DIR/www/pool"
	rm -f "$REPO_DIR"/www/*.deb # before pool/ (cached repositories of older lab.sh)
	[ -f "$REPO_DIR/www/pool/gpukit-lab-hello_1.0_all.deb" ] || build_hello_package
	local f reindex=0
	for f in "$@"; do cp -f "$f" "$REPO_DIR/www/pool/"; reindex=1; done
	if ((reindex)) || [ ! -f "$REPO_DIR/www/Release" ] || ! grep -qs '^Filename: pool/' "$REPO_DIR/www/Packages"; then repo_index; fi
	repo_serve
}
# stop_service PIDFILE PATTERN: stops the server PIDFILE names, and any other whose command line
# contains PATTERN (one whose pid file was lost).
stop_service() {
	if live_pid "$1"; then
		kill "$PID" 2>/dev/null || true
		wait_gone 5 "$PID"
	fi
	rm -f "$1"
	kill_matching "$2"
}
repo_stop() { stop_service "$REPO_DIR/pid" "http.server $REPO_PORT --bind $BRIDGE_ADDR"; }
cmd_repo() {
	local f abs=()
	for f in "$@"; do [ -f "$f" ] || die "no such file: $f"; abs+=("$(readlink -f "$f")"); done
	cmd_deps
	with_lock repo_locked "${abs[@]}"
	printf '%s\n' "$REPO_URL"
}
repo_locked() { bridge_up; repo_ensure "$@"; }

# ---------------------------------------------------------------- Debian package proxy (apt-cacher-ng)
# Lab hosts have no route out. Like an air-gapped site's local mirror, apt-cacher-ng on the bridge
# address serves Debian (bookworm, bookworm-updates: /debian; bookworm-security: /debian-security;
# every component) from this machine's mirror and caches what hosts fetch in $DEBIAN_DIR/cache,
# which outlives `down`. `up` does not start it: `debian-mirror` does, on demand (the last
# `release`, and `down`, stop it). Hosts are NOT pointed at it: `debian-mirror` prints the URLs
# (or a deb822 sources file) for whoever configures them. Only these two trees are served (ForceManaged);
# apt in the hosts checks Debian's signatures as usual. Port 3143, not apt-cacher-ng's 3142: a
# machine-wide apt-cacher-ng (the package starts one where systemd runs) holds *:3142.
security_mirror() {
	if [ -n "${GPUKIT_LAB_SECURITY_MIRROR:-}" ]; then printf '%s' "$GPUKIT_LAB_SECURITY_MIRROR"; return; fi
	local m
	m=$(apt_source_uri -security -security)
	if [ -z "$m" ] && [ -z "${GPUKIT_LAB_MIRROR:-}" ]; then m=$(mirror); [[ $m == */debian ]] && m=$m-security || m=; fi
	printf '%s' "${m:-http://deb.debian.org/debian-security}"
}
debian_conf() { # the proxy's configuration, on stdout
	local deb sec
	deb=$(mirror) sec=$(security_mirror)
	cat <<EOF
# apt-cacher-ng of the gpukit lab (test/lab/lab.sh): Debian for lab hosts, from this machine's mirror
CacheDir: $DEBIAN_DIR/cache
LogDir: $DEBIAN_DIR/log
SupportDir: /usr/lib/apt-cacher-ng
Port: $DEBIAN_PORT
BindAddress: $BRIDGE_ADDR
SocketPath: $DEBIAN_DIR/acng.socket
PidFile: $DEBIAN_DIR/acng.pid
ForeGround: 1
UnbufferLogs: 1
# only Debian, only from this machine's mirror; no CONNECT tunnels
ForceManaged: 1
PassThroughPattern: ^\$
# /debian and /debian-security (the mirror form), or the usual names through the proxy form
Remap-gklabdeb: /debian deb.debian.org/debian ftp.debian.org/debian httpredir.debian.org/debian ; ${deb%/}/
Remap-gklabsec: /debian-security deb.debian.org/debian-security security.debian.org/debian-security security.debian.org ; ${sec%/}/
NetworkTimeout: 30
ExThreshold: 4
EOF
}
debian_serve() { # under the lock, after bridge_up: the proxy runs (restarted if its configuration changed)
	local acng=/usr/sbin/apt-cacher-ng user=apt-cacher-ng
	[ -x "$acng" ] || die "apt-cacher-ng is not installed (sudo $SELF deps)"
	mkdir -p "$DEBIAN_DIR/conf" "$DEBIAN_DIR/cache" "$DEBIAN_DIR/log"
	debian_conf >"$DEBIAN_DIR/conf/acng.conf.new"
	if cmp -s "$DEBIAN_DIR/conf/acng.conf.new" "$DEBIAN_DIR/conf/acng.conf"; then
		rm -f "$DEBIAN_DIR/conf/acng.conf.new"
	else
		debian_stop
		mv "$DEBIAN_DIR/conf/acng.conf.new" "$DEBIAN_DIR/conf/acng.conf"
	fi
	if ! live_pid "$DEBIAN_DIR/pid"; then
		kill_matching "$acng -c $DEBIAN_DIR/conf" # one whose pid file was lost
		local run=(setpriv --reuid="$user" --regid="$user" --init-groups --)
		# not as root: as apt-cacher-ng's own user (made by its package), which owns the cache;
		# as root where that user cannot reach the lab dir (e.g. under a test's 0700 temp dir)
		if id -u "$user" >/dev/null 2>&1; then
			chown -R "$user:" "$DEBIAN_DIR/cache" "$DEBIAN_DIR/log"
			chown "$user:" "$DEBIAN_DIR"
			"${run[@]}" test -r "$DEBIAN_DIR/conf/acng.conf" -a -w "$DEBIAN_DIR/cache" || run=()
		else
			run=()
		fi
		setsid "${run[@]}" "$acng" -c "$DEBIAN_DIR/conf" </dev/null >"$DEBIAN_DIR/log/stdout.log" 2>&1 9>&- &
		write_pid $! "$DEBIAN_DIR/pid"
	fi
	wait_tcp 10 "$BRIDGE_ADDR" "$DEBIAN_PORT" ||
		{ cat "$DEBIAN_DIR/log/stdout.log" "$DEBIAN_DIR/log/apt-cacher.err" 2>/dev/null | tail -n 5 | scrub >&2; die "the Debian proxy (apt-cacher-ng) did not start (logs: $DEBIAN_DIR/log)"; }
}
debian_stop() { stop_service "$DEBIAN_DIR/pid" "apt-cacher-ng -c $DEBIAN_DIR/conf"; }
debian_locked() { bridge_up; debian_serve; }
# debian_check: this machine's mirror answers through the proxy (the Release files of the three
# suites); else a clear error. What it fetches is cached: it also warms the cache.
debian_check() {
	local err
	err=$(/usr/bin/python3 - "$DEBIAN_URL" 2>&1 <<'EOF'
import sys, urllib.error, urllib.request
base = sys.argv[1]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy: the lab's address
for path in ("/debian/dists/bookworm/InRelease", "/debian/dists/bookworm-updates/InRelease",
             "/debian-security/dists/bookworm-security/InRelease"):
    try:
        with opener.open(base + path, timeout=90) as r:
            body = r.read()
        if b"BEGIN PGP SIGNED MESSAGE" not in body[:100]:
            sys.exit(f"{path}: not a signed Release file")
    except urllib.error.HTTPError as e:
        sys.exit(f"{path}: HTTP {e.code} {e.reason}")
    except Exception as e:
        sys.exit(f"{path}: {e}")
EOF
	) && return 0
	err=$(printf '%s' "$err" | tail -n 3 | scrub)
	die "this machine's Debian mirror is unreachable through the lab's proxy: $err" \
		"(the mirror: GPUKIT_LAB_MIRROR / GPUKIT_LAB_SECURITY_MIRROR, else /etc/apt/sources*; logs: $DEBIAN_DIR/log)"
}
debian_sources() { # a deb822 sources file for lab hosts, with Debian's keyring
	local c='main contrib non-free non-free-firmware' k=/usr/share/keyrings/debian-archive-keyring.gpg
	printf '# Debian from the gpukit lab'"'"'s package proxy (lab.sh debian-mirror)\n'
	printf 'Types: deb\nURIs: %s/debian\nSuites: %s %s-updates\nComponents: %s\nSigned-By: %s\n\n' "$DEBIAN_URL" "$SUITE" "$SUITE" "$c" "$k"
	printf 'Types: deb\nURIs: %s/debian-security\nSuites: %s-security\nComponents: %s\nSigned-By: %s\n' "$DEBIAN_URL" "$SUITE" "$c" "$k"
}
cmd_debian_mirror() { # debian-mirror [urls|sources]
	local what=${1:-urls}
	case $what in urls | sources) ;; *) die "usage: lab.sh debian-mirror [urls|sources]" ;; esac
	cmd_deps
	with_lock debian_locked
	debian_check
	if [ "$what" = sources ]; then debian_sources; return; fi
	printf 'debian %s/debian\nsecurity %s/debian-security\nproxy %s/\n' "$DEBIAN_URL" "$DEBIAN_URL" "$DEBIAN_URL"
}

# ---------------------------------------------------------------- a site's HTTP proxy (squid)
# Many GPU sites reach their mirrors and the internet only through an HTTP proxy. Squid on the
# bridge (port 3128) forwards lab hosts' requests, plain and CONNECT, to any port, caches
# nothing, and logs each request with its client address in $PROXY_DIR/access.log. With
# `direct off PORT..`, a lab's hosts can no longer reach those ports of the bridge themselves:
# the proxy (on this machine, past the rule) is their only way there. `proxy` starts it on
# demand; the last `release`, and `down`, stop it.
PROXY_PORT=3128
PROXY_DIR=$LAB/proxy
proxy_conf() {
	cat <<EOF
# squid of the gpukit lab (test/lab/lab.sh): a site's HTTP proxy, on the lab bridge only
http_port $BRIDGE_ADDR:$PROXY_PORT
pid_filename $PROXY_DIR/squid.pid
access_log stdio:$PROXY_DIR/access.log squid
cache_log $PROXY_DIR/cache.log
cache_store_log none
cache deny all
cache_mem 8 MB
coredump_dir $PROXY_DIR
acl lab src $NET.0.0/16
http_access allow lab
http_access deny all
forwarded_for delete
via off
shutdown_lifetime 1 seconds
EOF
}
proxy_serve() { # under the lock, after bridge_up
	local bin=/usr/sbin/squid
	[ -x "$bin" ] || die "squid is not installed (sudo $SELF deps)"
	mkdir -p "$PROXY_DIR"
	proxy_conf >"$PROXY_DIR/squid.conf.new"
	if cmp -s "$PROXY_DIR/squid.conf.new" "$PROXY_DIR/squid.conf"; then
		rm -f "$PROXY_DIR/squid.conf.new"
	else
		proxy_stop
		mv "$PROXY_DIR/squid.conf.new" "$PROXY_DIR/squid.conf"
	fi
	if ! live_pid "$PROXY_DIR/pid"; then
		kill_matching "$bin -N -f $PROXY_DIR/squid.conf"
		# squid drops to its own user (proxy): it must write its logs
		if id -u proxy >/dev/null 2>&1; then chown proxy: "$PROXY_DIR"; fi
		setsid "$bin" -N -f "$PROXY_DIR/squid.conf" </dev/null >"$PROXY_DIR/stdout.log" 2>&1 9>&- &
		write_pid $! "$PROXY_DIR/pid"
	fi
	wait_tcp 20 "$BRIDGE_ADDR" "$PROXY_PORT" ||
		{ tail -n 5 "$PROXY_DIR/cache.log" "$PROXY_DIR/stdout.log" 2>/dev/null | scrub >&2; die "the proxy (squid) did not start (logs: $PROXY_DIR)"; }
}
proxy_stop() { stop_service "$PROXY_DIR/pid" "squid -N -f $PROXY_DIR/squid.conf"; }
proxy_locked() { bridge_up; proxy_serve; }
cmd_proxy() {
	cmd_deps
	with_lock proxy_locked
	printf 'url http://%s:%s\naccess-log %s\n' "$BRIDGE_ADDR" "$PROXY_PORT" "$PROXY_DIR/access.log"
}
# direct off|on PORT..: this lab's hosts (full and light subnets) may not / may again reach the
# bridge's PORTs themselves. The rule is on this machine's INPUT from the bridge: what the proxy
# forwards comes from this machine itself and passes.
direct_rule() { # direct_rule -I|-D|-C PORT
	iptables -w "$1" INPUT -i "$BRIDGE" -s "$NET.$((2 * ID)).0/23" -d "$BRIDGE_ADDR" -p tcp --dport "$2" \
		-m comment --comment "gpukit-lab-$ID-direct" -j REJECT --reject-with tcp-reset
}
direct_flush() { # direct_flush [ID-PATTERN]: every rule of this lab (release), or of every lab (down: '[0-9]*')
	local rule
	command -v iptables >/dev/null || return 0
	while rule=$(iptables -w -S INPUT 2>/dev/null | grep -m1 -E -- "gpukit-lab-${1:-$ID}-direct"); do
		# shellcheck disable=SC2086 # the rule's own words
		eval "iptables -w -D ${rule#-A }" 2>/dev/null || break
	done
}
cmd_direct() {
	check_id
	local how=${1:-} port
	shift || true
	case $how in off | on) ;; *) die "usage: lab.sh direct off|on PORT.." ;; esac
	(($#)) || die "usage: lab.sh direct off|on PORT.."
	command -v iptables >/dev/null || die "iptables is not installed (sudo $SELF deps)"
	for port in "$@"; do
		[[ $port =~ ^[0-9]+$ ]] || die "not a port: $port"
		if [ "$how" = off ]; then
			direct_rule -C "$port" 2>/dev/null || direct_rule -I "$port"
		else
			while direct_rule -C "$port" 2>/dev/null; do direct_rule -D "$port"; done
		fi
	done
}

# ---------------------------------------------------------------- container registry
# A registry on the bridge (Debian's docker-registry, Docker's distribution), like an air-gapped
# site's image mirror: 10.251.0.1:5000 (plain http). Images are pushed from directories.
registry_conf() {
	cat <<EOF
# docker-registry of the gpukit lab (test/lab/lab.sh), on the lab bridge only
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $REGISTRY_DIR/data}
  delete: {enabled: true}
http:
  addr: $REGISTRY
EOF
}
registry_serve() { # under the lock, after bridge_up
	local bin=/usr/bin/docker-registry
	[ -x "$bin" ] || die "docker-registry is not installed (sudo $SELF deps)"
	mkdir -p "$REGISTRY_DIR/data"
	registry_conf >"$REGISTRY_DIR/config.yml.new"
	if cmp -s "$REGISTRY_DIR/config.yml.new" "$REGISTRY_DIR/config.yml"; then
		rm -f "$REGISTRY_DIR/config.yml.new"
	else
		registry_stop
		mv "$REGISTRY_DIR/config.yml.new" "$REGISTRY_DIR/config.yml"
	fi
	if ! live_pid "$REGISTRY_DIR/pid"; then
		kill_matching "$bin serve $REGISTRY_DIR/config.yml"
		setsid "$bin" serve "$REGISTRY_DIR/config.yml" </dev/null >"$REGISTRY_DIR/registry.log" 2>&1 9>&- &
		write_pid $! "$REGISTRY_DIR/pid"
	fi
	wait_tcp 10 "$BRIDGE_ADDR" "$REGISTRY_PORT" ||
		{ tail -n 5 "$REGISTRY_DIR/registry.log" >&2; die "the registry did not start (log: $REGISTRY_DIR/registry.log)"; }
}
registry_stop() {
	stop_service "$REGISTRY_DIR/pid" "docker-registry serve $REGISTRY_DIR/config.yml"
	secure_registry_stop
}
registry_locked() { bridge_up; registry_serve; }
# registry_push NAME:TAG DIR [ENTRYPOINT...]: DIR as a one-layer OCI image (reproducible: owner 0,
# times 0, sorted), pushed to the lab registry with skopeo; prints its manifest digest.
registry_push() {
	local ref=$1 dir=$2 tmp name tag
	shift 2
	[[ $ref =~ ^[a-z0-9][a-z0-9._/-]*:[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]] || die "image $ref: want name:tag"
	[ -d "$dir" ] || die "image $ref: $dir is not a directory"
	name=${ref%:*} tag=${ref##*:}
	tmp=$(mktemp -d)
	mkdir -p "$tmp/oci/blobs/sha256"
	tar -C "$dir" --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -cf "$tmp/layer.tar" .
	/usr/bin/python3 - "$tmp" "$tag" "$@" <<'PY'
import gzip, hashlib, json, os, sys
tmp, tag, entry = sys.argv[1], sys.argv[2], sys.argv[3:]
blobs = os.path.join(tmp, "oci", "blobs", "sha256")
def put(data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, d), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + d, "size": len(data)}
raw = open(os.path.join(tmp, "layer.tar"), "rb").read()
layer = put(gzip.compress(raw, compresslevel=1, mtime=0))  # level 1: 100 MB binaries, pushed every run
config = {"architecture": "amd64", "os": "linux",
          "config": {"Entrypoint": entry or None, "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
          "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]}}
cfg = put(json.dumps(config, sort_keys=True).encode())
manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": dict(cfg, mediaType="application/vnd.oci.image.config.v1+json"),
            "layers": [dict(layer, mediaType="application/vnd.oci.image.layer.v1.tar+gzip")]}
m = put(json.dumps(manifest, sort_keys=True).encode())
index = {"schemaVersion": 2, "manifests": [dict(m, mediaType="application/vnd.oci.image.manifest.v1+json",
                                                annotations={"org.opencontainers.image.ref.name": tag})]}
json.dump(index, open(os.path.join(tmp, "oci", "index.json"), "w"))
json.dump({"imageLayoutVersion": "1.0.0"}, open(os.path.join(tmp, "oci", "oci-layout"), "w"))
PY
	local rc=0
	skopeo copy -q --dest-tls-verify=false "oci:$tmp/oci:$tag" "docker://$REGISTRY/$name:$tag" >&2 || rc=$?
	rm -rf "$tmp"
	((rc == 0)) || die "push $ref to $REGISTRY failed"
	skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$REGISTRY/$name:$tag"
}
# registry tls DIR: the same images behind TLS and a login, as a site's private registry: a second
# docker-registry on 10.251.0.1:5443 over the same storage, with DIR's cert.pem and key.pem (its
# certificate, signed by a CA the hosts do not know) and htpasswd (bcrypt). Stops with the other.
SECURE_REGISTRY_PORT=5443
secure_registry_conf() { # secure_registry_conf DIR
	cat <<EOF
# docker-registry of the gpukit lab (test/lab/lab.sh): TLS and a login, on the lab bridge only
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $REGISTRY_DIR/data}
  delete: {enabled: true}
http:
  addr: $BRIDGE_ADDR:$SECURE_REGISTRY_PORT
  tls: {certificate: $1/cert.pem, key: $1/key.pem}
auth:
  htpasswd: {realm: gpukit-lab, path: $1/htpasswd}
EOF
}
secure_registry_serve() { # under the lock, after registry_serve: secure_registry_serve DIR
	local bin=/usr/bin/docker-registry conf=$REGISTRY_DIR/secure.yml f
	for f in cert.pem key.pem htpasswd; do [ -s "$1/$f" ] || die "registry tls: no $1/$f"; done
	secure_registry_conf "$1" >"$conf.new"
	if cmp -s "$conf.new" "$conf"; then rm -f "$conf.new"; else secure_registry_stop; mv "$conf.new" "$conf"; fi
	if ! live_pid "$REGISTRY_DIR/secure.pid"; then
		kill_matching "$bin serve $conf"
		setsid "$bin" serve "$conf" </dev/null >"$REGISTRY_DIR/secure.log" 2>&1 9>&- &
		write_pid $! "$REGISTRY_DIR/secure.pid"
	fi
	wait_tcp 10 "$BRIDGE_ADDR" "$SECURE_REGISTRY_PORT" ||
		{ tail -n 5 "$REGISTRY_DIR/secure.log" >&2; die "the TLS registry did not start (log: $REGISTRY_DIR/secure.log)"; }
}
secure_registry_stop() { stop_service "$REGISTRY_DIR/secure.pid" "docker-registry serve $REGISTRY_DIR/secure.yml"; }
cmd_registry() { # registry [push NAME:TAG DIR [ENTRYPOINT...] | tls DIR]
	cmd_deps
	with_lock registry_locked
	case ${1:-} in
	"") printf '%s\n' "$REGISTRY" ;;
	push)
		shift
		(($# >= 2)) || die "usage: lab.sh registry push NAME:TAG DIR [ENTRYPOINT...]"
		registry_push "$@" ;;
	tls)
		[ -d "${2:-}" ] || die "usage: lab.sh registry tls DIR (with cert.pem, key.pem, htpasswd)"
		local dir
		dir=$(cd "$2" && pwd)
		with_lock secure_registry_serve "$dir"
		printf '%s:%s\n' "$BRIDGE_ADDR" "$SECURE_REGISTRY_PORT" ;;
	*) die "usage: lab.sh registry [push NAME:TAG DIR [ENTRYPOINT...] | tls DIR]" ;;
	esac
}

# ---------------------------------------------------------------- cgroups (full hosts: one per host in every hierarchy)
# Without a host systemd every nspawn container would share the caller's cgroup (and systemd's
# "payload" sub-cgroup); a cgroup per host also gives per-host memory accounting and a way to
# kill every process of a host. Placed below the caller's own cgroup; best effort. Light hosts
# have none: their pid namespace already takes every process down with sshd, and creating a
# memory cgroup costs ~190 ms here, serialised by the kernel (20 s for 100 hosts).
cgroup_dirs() { # cgroup_dirs: this host's dir in every hierarchy (after `host NAME`)
	local ctrl path m v2=0
	[ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && v2=1
	while IFS=: read -r _ ctrl path; do
		case $ctrl in
		"") if ((v2)); then m=/sys/fs/cgroup; else m=/sys/fs/cgroup/unified; fi ;;
		name=systemd) m=/sys/fs/cgroup/systemd ;;
		name=*) continue ;;
		*) m=/sys/fs/cgroup/${ctrl%%,*} ;;
		esac
		[ -d "$m$path" ] && printf '%s/%s/%s/%s\n' "${m}${path%/}" "$CGROUP_NAME" "$ID" "$NS"
	done </proc/self/cgroup
}
cgroup_enter() { # cgroup_enter: moves this shell into the host's cgroups, recording them in $HD/cgroups
	local d cur part f
	: >"$HD/cgroups"
	while read -r d; do
		case $d in
		*/cpuset/*) # level by level: cpuset needs cpus and mems at every level
			cur=${d%%/"$CGROUP_NAME"/*}
			for part in "$CGROUP_NAME" "$ID" "$NS"; do
				cur=$cur/$part
				[ -d "$cur" ] || mkdir "$cur" 2>/dev/null || continue 2
				for f in cpuset.cpus cpuset.mems; do [ -s "$cur/$f" ] || cat "${cur%/*}/$f" >"$cur/$f" 2>/dev/null || true; done
			done ;;
		*) mkdir -p "$d" 2>/dev/null || continue ;;
		esac
		echo "$BASHPID" >"$d/cgroup.procs" 2>/dev/null && echo "$d" >>"$HD/cgroups"
	done < <(cgroup_dirs)
}
cgroup_kill_remove() { # cgroup_kill_remove DIR...: SIGKILL everything inside, then remove the trees
	local d p _ left
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		left=0
		for d; do
			[ -d "$d" ] || continue
			while read -r p; do kill -KILL "$p" 2>/dev/null || true; left=1; done < <(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null)
		done
		((left)) || break
		nap 0.2
	done
	for d; do if [ -d "$d" ]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi; done
}
cgroup_sweep() { # cgroup_sweep PATTERN: every gpukit-lab cgroup of lab PATTERN ("*": all labs)
	local dirs=() d
	while read -r d; do dirs+=("$d"); done < <(find /sys/fs/cgroup -mindepth 2 -maxdepth 8 -type d -path "*/$CGROUP_NAME/$1" 2>/dev/null)
	if ((${#dirs[@]})); then cgroup_kill_remove "${dirs[@]}"; fi
	while read -r d; do # the gpukit-lab level itself, once no lab is left in it
		[ -n "$(find "$d" -mindepth 1 -maxdepth 1 -type d -print -quit)" ] || rmdir "$d" 2>/dev/null || true
	done < <(find /sys/fs/cgroup -mindepth 2 -maxdepth 7 -type d -name "$CGROUP_NAME" 2>/dev/null)
}

# ---------------------------------------------------------------- creating and starting hosts
host_keygen() { # host_keygen ROOT NAME TYPE...: new host keys and the HostKey drop-in naming them
	local R=$1 name=$2 t conf='# host keys of this lab host (test/lab/lab.sh)'
	shift 2
	rm -f "$R"/etc/ssh/ssh_host_*
	for t; do
		ssh-keygen -q -t "$t" -N '' -C "root@$name" -f "$R/etc/ssh/ssh_host_${t}_key"
		conf+=$'\n'"HostKey /etc/ssh/ssh_host_${t}_key"
	done
	printf '%s\n' "$conf" >"$R/etc/ssh/sshd_config.d/10-gpukit-lab-hostkeys.conf"
}
personalize() { # identity of a new host (after `host NAME`), written into its upper layer
	local name=$1 f t k
	echo "$name" >"$M/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$name" >"$M/etc/hosts"
	printf '%08x%08x%08x%08x\n' "$SRANDOM" "$SRANDOM" "$SRANDOM" "$SRANDOM" >"$M/etc/machine-id"
	# Full hosts carry the three key types of a stock Debian host (clients must cope with a server
	# that prefers a type they hold no known_hosts line for); light hosts skip RSA (slow at 100+).
	if [ "$KIND" = full ]; then host_keygen "$M" "$name" rsa ecdsa ed25519; else host_keygen "$M" "$name" ecdsa ed25519; fi
	: >"$HD/known_hosts" # the keys at creation: `rekey` does not change what the lab trusts
	for f in "$M"/etc/ssh/ssh_host_*_key.pub; do read -r t k _ <"$f"; printf '%s %s %s\n' "$ADDR" "$t" "$k" >>"$HD/known_hosts"; done
	if [ "$KIND" = full ]; then
		mkdir -p "$M/etc/systemd/network"
		printf '[Match]\nName=eth0\n\n[Network]\nAddress=%s/16\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' "$ADDR" \
			>"$M/etc/systemd/network/10-gpukit-lab.network"
	fi
	if ((${KUBE:-0})) && [ "$KIND" = full ]; then kube_host; fi
	if ((${FABRIC:-0})) && [ "$KIND" = full ]; then
		touch "$HD/fabric"
		printf '[Match]\nName=eth1\n\n[Network]\nAddress=%s/16\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' "$FABRIC_NET.${ADDR#"$NET".}" \
			>"$M/etc/systemd/network/11-gpukit-lab-fabric.network"
	fi
	touch "$HD/personalized"
}
# kube_host: what a Kubernetes node needs here (after `host NAME`, at creation; each fixes an error
# kubeadm, kubelet or runc gave on a lab host): kubelet reads /dev/kmsg (CAP_SYSLOG: all
# capabilities), containerd's overlay snapshots cannot sit on the host's overlayfs root
# (/var/lib/containerd on this machine's disk), and kubelet writes vm.overcommit_memory,
# kernel.panic and kernel.panic_on_oops, which are machine-wide: the host sees files of its own
# there, holding the values kubelet wants. Own cgroups in every hierarchy, writable controllers and
# the keyring syscalls every full host has already.
kube_host() {
	touch "$HD/kube"
	mkdir -p "$HD/containerd" "$M/etc/gpukit-lab/sysctl"
	# An air-gapped site's hosts have a default gateway and a resolver, with
	# nothing behind them: the bridge plays both (nothing answers DNS there).
	# The host's own connections to service IPs need the route (kube-proxy
	# rewrites them after routing), CoreDNS an upstream to start.
	printf 'Gateway=%s\n' "$BRIDGE_ADDR" >>"$M/etc/systemd/network/10-gpukit-lab.network"
	printf 'nameserver %s\n' "$BRIDGE_ADDR" >"$M/etc/gpukit-lab/resolv.conf"
	printf '1\n' >"$M/etc/gpukit-lab/sysctl/vm.overcommit_memory"
	printf '10\n' >"$M/etc/gpukit-lab/sysctl/kernel.panic"
	printf '1\n' >"$M/etc/gpukit-lab/sysctl/kernel.panic_on_oops"
}
# net_up NAME...: netns + veth on the bridge for each host, one `ip` run for all of them. The
# netns outlives a stop/start. eth0's address: networkd (full), _init (light). eth0's MAC follows
# from the address, like a machine reinstalled on its NIC: ARP caches (this machine's, other
# hosts') stay right when a lab id is reused, instead of pointing at a dead MAC for 10-40 s.
net_up() {
	local n batch="" stale="" mac a
	for n; do
		host "$n"
		a=${ADDR#"$NET".}
		printf -v mac '02:67:6b:fb:%02x:%02x' "${a%.*}" "${a#*.}"
		local fabric=0
		if [ "$KIND" = full ] && { ((${FABRIC:-0})) || [ -e "$HD/fabric" ]; }; then fabric=1; fi
		if [ -e "/run/netns/$NS" ]; then
			if ip link show "$NS" >/dev/null 2>&1; then # a restart: netns and veth survived the stop
				batch+="link set $NS master $BRIDGE up"$'\n'
				if ((fabric)); then batch+="link set ${NS}f master $FABRIC_BRIDGE up"$'\n'; fi
				continue
			fi
			if mountpoint -q "/run/netns/$NS"; then ip netns del "$NS"; else rm -f "/run/netns/$NS"; fi # stale (/run on disk)
		fi
		# a veth left by a crash (sysfs is only a hint: it shows the netns that mounted it)
		if [ -e "/sys/class/net/$NS" ]; then stale+="link del $NS"$'\n'; fi
		batch+="netns add $NS"$'\n'"link add $NS type veth peer name eth0 address $mac netns $NS"$'\n'"link set $NS master $BRIDGE up"$'\n'
		if ((fabric)); then
			if [ -e "/sys/class/net/${NS}f" ]; then stale+="link del ${NS}f"$'\n'; fi
			printf -v mac '02:67:6b:fc:%02x:%02x' "${a%.*}" "${a#*.}"
			batch+="link add ${NS}f type veth peer name eth1 address $mac netns $NS"$'\n'"link set ${NS}f master $FABRIC_BRIDGE up"$'\n'
		fi
	done
	if [ -n "$stale" ]; then ip -force -batch - <<<"$stale" >/dev/null 2>&1 || true; fi
	if [ -n "$batch" ]; then ip -batch - <<<"$batch"; fi
}
net_down() { # powered off (after `host NAME`): no link, no address; peers get no ARP answer
	[ -e "/run/netns/$NS" ] || return 0
	ip -n "$NS" -force -batch - >/dev/null 2>&1 <<<$'addr flush dev eth0\nlink set eth0 down\naddr flush dev eth1\nlink set eth1 down' || true
}
host_prepare() { # host_prepare NAME: overlay mounted, identity written
	host "$1"
	mkdir -p "$HD/upper" "$HD/work" "$M"
	mountpoint -q "$M" || mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$HD/upper,workdir=$HD/work" "$M"
	[ -f "$HD/personalized" ] || personalize "$1"
}
host_boot() { # host_boot NAME: starts a prepared host, waits until it serves ssh (full: until booted)
	host "$1"
	if live_pid "$HD/pid"; then
		read_state
		[ "$KIND" = full ] && [ "$STATE" = rebooting ] || return 0
		kill -USR1 "$PID" # rebooting: the delay ends now
		host_wait_booted "$1" "$PID" $((SECONDS + 60))
		return
	fi
	rm -rf "/run/systemd/nspawn/propagate/$NS" "$HD/net-up"
	# $M on the command line: sweeps by path (kill_matching) find a supervisor whose pid file is lost
	setsid "$SELF" _launch "$1" "$M" </dev/null >>"$HD/console.log" 2>&1 &
	local pid=$! end=$((SECONDS + 60)) state
	write_pid "$pid" "$HD/pid"
	host_wait_booted "$1" "$pid" "$end"
}
host_wait_booted() { # host_wait_booted NAME PID END: until the host serves ssh (full: booted)
	local pid=$2 end=$3 state
	host "$1"
	until host_answers; do
		alive "$pid" || { tail -n 20 "$HD/console.log" | scrub >&2; die "$1 exited while starting (console: $HD/console.log)"; }
		((SECONDS < end)) || die "$1: no ssh on $ADDR:22 after 60 s (console: $HD/console.log)"
		nap 0.1
	done
	while [ "$KIND" = full ]; do # ready = boot finished (running or degraded), asked over real ssh
		state=$(ssh_to "$HD/known_hosts" root "$ADDR" 'timeout 60 systemctl is-system-running --wait' 2>&1) || true
		case $state in
		running | degraded) break ;;
		ssh:* | *"Connection "*) ((SECONDS < end)) || die "$1: no ssh login: $state"; nap 0.2 ;; # sshd was restarting
		*) die "$1: systemd did not finish booting: $state (console: $HD/console.log)" ;;
		esac
	done
}

host_answers() { # sshd accepts connections (after `host NAME`)
	# a light host has its address once _init says so, and then connect is refused or accepted at
	# once; a full host gets it from networkd, until then connect waits for ARP, so bound it
	if [ "$KIND" = light ]; then [ -e "$HD/net-up" ] && port_open "$ADDR" 22
	else timeout 2 bash -c "exec 3<>/dev/tcp/$ADDR/22" 2>/dev/null; fi
}
# ---------------------------------------------------------------- reboots (full hosts)
# A full host's pid file holds its supervisor, which boots systemd-nspawn and waits. When the host
# asks for a reboot (systemctl reboot, reboot, shutdown -r: nspawn exits with status 133), the
# supervisor cuts the power like a rebooting machine - every process of the host killed, its link
# down (connections time out) - and boots it again after the host's reboot delay, with the same
# disk (upper layer), host keys, address, MAC and netns. Any other exit (poweroff: status 0) leaves
# the host off. SIGTERM (stop, release, down) powers the host off and ends the supervisor; SIGUSR1
# (start, up) cuts a reboot delay short. When the test that started the lab is gone (its owner
# file names a dead process), the supervisor powers its host off and exits: a killed test binary
# leaves no supervisor, nor a running host, behind; the next Start or `down` removes the rest.
#
# $HD/state: "WORD BOOTS", WORD running (nspawn runs), rebooting (waiting for the delay), off
# (powered off from inside, or its owner died), down (reboot with delay "never"), stopped
# (lab.sh stop); BOOTS counts the host's boots.
REBOOT_DELAY_DEFAULT=3
valid_delay() { [[ $1 == never || $1 =~ ^[0-9]{1,6}(\.[0-9]{1,6})?$ ]]; }
reboot_delay() { # sets DELAY: this host's reboot delay (seconds, or "never"), after `host NAME`
	DELAY=
	if [ -f "$HD/reboot-delay" ]; then read -r DELAY <"$HD/reboot-delay" || true; fi
	if [ -z "$DELAY" ] && [ -f "$HD/reboot-delay.default" ]; then read -r DELAY <"$HD/reboot-delay.default" || true; fi
	valid_delay "${DELAY:-x}" || DELAY=${GPUKIT_LAB_REBOOT_DELAY:-$REBOOT_DELAY_DEFAULT}
}
now_us() { NOW_US=${EPOCHREALTIME//[!0-9]/}; } # microseconds, no fork
seconds_us() { # seconds_us S[.F]: sets US
	local f=000000
	[[ $1 == *.* ]] && f=${1#*.}000000
	US=$((10#${1%%.*} * 1000000 + 10#${f:0:6}))
}
write_state() { printf '%s %s\n' "$1" "$2" >"$HD/state.new" && mv -f "$HD/state.new" "$HD/state"; } # readers never see it half written
read_state() { # sets STATE and BOOTS from $HD/state (after `host NAME`)
	STATE='' BOOTS=0
	if [ -f "$HD/state" ]; then read -r STATE BOOTS <"$HD/state" || true; fi
	[[ $BOOTS =~ ^[0-9]+$ ]] || BOOTS=0
}
host_state() { # sets STATE: running, rebooting, off, down or stopped (after `host NAME`)
	read_state
	if live_pid "$HD/pid"; then
		if [ "$KIND" = light ] || [ -z "$STATE" ] || [ "$STATE" = stopped ]; then STATE=running; fi
	elif [ "$STATE" != off ] && [ "$STATE" != down ]; then
		STATE=stopped
	fi
}
owner_gone() { [ ! -d "$HD" ] || { [ -f "$RUN/owner" ] && ! live_pid "$RUN/owner"; }; }
# exit_if_owner_gone BOOTS: a supervisor whose host is gone, or whose test is, records the host
# off (if it still exists) and exits.
exit_if_owner_gone() {
	owner_gone || return 0
	if [ -d "$HD" ]; then write_state off "$1"; fi
	exit 0
}
power_cut() { # after nspawn exited: what a reset takes down (processes, cgroups, link)
	local cgs=()
	if [ -f "$HD/cgroups" ]; then mapfile -t cgs <"$HD/cgroups"; fi
	if ((${#cgs[@]})); then cgroup_kill_remove "${cgs[@]}"; fi
	rm -f "$HD/cgroups"
	rm -rf "/run/systemd/nspawn/propagate/$NS"
	net_down
}
supervise() { # supervise NAME (after `host NAME`), in the supervisor's process
	local name=$1 child='' cstart rc stop=0 wake=0 since kube
	read_state
	local boots=$BOOTS
	if valid_delay "${GPUKIT_LAB_REBOOT_DELAY:-$REBOOT_DELAY_DEFAULT}"; then
		printf '%s\n' "${GPUKIT_LAB_REBOOT_DELAY:-$REBOOT_DELAY_DEFAULT}" >"$HD/reboot-delay.default"
	fi
	# Signals wake the loops below at once: a trap writes a line to the pipe that nap reads (bash
	# resumes a `read -t` after running a trap). (No CHLD trap: bash runs it at odd moments, e.g.
	# while parsing a command substitution, and failed with syntax errors here.)
	nap 0
	trap 'stop=1; if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi; echo >&"$NAP_FD"' TERM INT HUP
	trap 'wake=1; echo >&"$NAP_FD"' USR1
	while :; do
		rm -rf "/run/systemd/nspawn/propagate/$NS"
		kube=()
		if [ -f "$HD/kube" ]; then kube=(--capability=all --bind=/dev/kmsg --bind="$HD/containerd:/var/lib/containerd"); fi
		(
			cgroup_enter
			# shellcheck disable=SC2086 # GPUKIT_LAB_NSPAWN_OPTS: extra options, word-split on purpose
			exec systemd-nspawn -q -D "$M" -M "$NS" --hostname="$name" --boot --register=no --keep-unit \
				--network-namespace-path="/run/netns/$NS" --capability=CAP_NET_ADMIN \
				--system-call-filter=@keyring "${kube[@]}" \
				--console=read-only --link-journal=no --resolv-conf=off --timezone=off \
				${GPUKIT_LAB_NSPAWN_OPTS:-}
		) &
		child=$!
		proc_stat "$child" && cstart=$PSTART || cstart=
		boots=$((boots + 1))
		write_state running "$boots"
		if ((stop)); then kill -TERM "$child" 2>/dev/null || true; fi
		# bash's wait would not notice the owner's death: poll (a builtin read with a timeout, no
		# fork); a reboot is seen within 0.25 s, a stop within 0.05 s
		while proc_stat "$child" && [ "$PSTATE" != Z ] && [ "$PSTART" = "$cstart" ]; do
			if ((stop)); then nap 0.05; else nap 0.25; fi
			if ((!stop)) && owner_gone; then
				log "$name: the test that started lab $ID is gone: powering off"
				stop=1
				kill -TERM "$child" 2>/dev/null || true
			fi
		done
		rc=0
		wait "$child" || rc=$?
		child=
		now_us
		since=$NOW_US
		power_cut
		exit_if_owner_gone "$boots"
		if ((stop)); then write_state stopped "$boots"; exit 0; fi
		if ((rc != 133)); then
			write_state off "$boots"
			log "$name: powered off (systemd-nspawn exited with status $rc)"
			exit 0
		fi
		reboot_delay
		log "$name: reboot (systemd-nspawn exited with status 133); reboot delay $DELAY"
		write_state rebooting "$boots"
		wake=0
		while :; do # the delay is read again and again: reboot-delay applies to a host waiting
			reboot_delay
			if [ "$DELAY" = never ]; then
				write_state down "$boots"
				log "$name: stays down (reboot delay never) until lab.sh start"
				exit 0
			fi
			((stop == 0)) || { write_state stopped "$boots"; exit 0; }
			((wake == 0)) || break
			seconds_us "$DELAY"
			now_us
			((NOW_US - since < US)) || break
			exit_if_owner_gone "$boots"
			nap 0.1
		done
	done
}

# _launch NAME ROOT: first process of a host's session. Full hosts: the host's supervisor (below);
# light hosts: becomes the host.
cmd__launch() {
	check_id
	host "$1"
	if [ "$KIND" = full ]; then supervise "$1"; exit; fi
	exec ip netns exec "$NS" unshare --mount --uts --ipc --pid --fork --kill-child --propagation private \
		"$SELF" _init "$1" "$M"
}
# _init NAME ROOT: PID 1 of a light host's pid namespace (until it execs sshd), in its own
# mount/uts/ipc namespaces and its network namespace.
cmd__init() {
	local name=$1 R=$2 n
	check_id
	host "$name"
	ip -batch - <<<"link set lo up"$'\n'"addr replace $ADDR/16 dev eth0"$'\n'"link set eth0 up"
	: >"$HD/net-up" # host_boot connects only now: an earlier SYN would wait ~1 s for an ARP retry
	hostname "${LAB_HOSTNAME_PREFIX:-}$name"
	mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
	mount --bind "$R/proc/sys" "$R/proc/sys"
	mount -o remount,bind,ro "$R/proc/sys"
	if [ -e "$R/proc/sysrq-trigger" ]; then
		mount --bind "$R/proc/sysrq-trigger" "$R/proc/sysrq-trigger"
		mount -o remount,bind,ro "$R/proc/sysrq-trigger"
	fi
	mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"
	mount -t tmpfs -o mode=755,size=16m,nosuid tmpfs "$R/dev"
	for n in null:3 zero:5 full:7 random:8 urandom:9; do mknod -m 666 "$R/dev/${n%:*}" c 1 "${n#*:}"; done
	mknod -m 666 "$R/dev/tty" c 5 0
	mkdir "$R/dev/pts" "$R/dev/shm"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5,nosuid,noexec devpts "$R/dev/pts"
	for n in ptmx:pts/ptmx fd:/proc/self/fd stdin:/proc/self/fd/0 stdout:/proc/self/fd/1 stderr:/proc/self/fd/2; do
		ln -s "${n#*:}" "$R/dev/${n%%:*}"
	done
	mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$R/dev/shm"
	mount -t tmpfs -o mode=755,nosuid,nodev,size=64m tmpfs "$R/run"
	mkdir -p "$R/run/sshd" "$R/run/lock"
	# pivot_root and drop the old root: the host keeps no reference to other hosts' mounts
	# (a chroot would pin a copy of every overlay that existed when it started).
	cd "$R"
	pivot_root . .
	umount -l .
	cd /
	exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 /usr/sbin/sshd -D -e
}

# ---------------------------------------------------------------- stopping hosts
# hosts_stop [--kill] NAME...: powers hosts off, all at once; keeps upper layers (host keys) and
# netns. --kill, for hosts about to be deleted: a light host's unshare gets SIGKILL, and its
# --kill-child takes PID 1 and the whole pid namespace along, without a pgrep per host.
hosts_stop() {
	local n pids=() init kill=0
	if [ "${1:-}" = --kill ]; then kill=1 && shift; fi
	for n; do
		host "$n"
		live_pid "$HD/pid" || continue
		pids+=("$PID")
		if [ "$KIND" = full ]; then
			kill -TERM "$PID" 2>/dev/null || true # nspawn turns SIGTERM into an orderly poweroff (~0.3 s)
		elif ((kill)); then
			kill -KILL "$PID" 2>/dev/null || true
		else
			# unshare --fork ignores SIGTERM; sshd is PID 1 of the host's pid namespace: when it exits
			# the kernel kills the whole namespace (~1-2 s here), then unshare exits.
			for init in $(pgrep -P "$PID" || true); do kill -TERM "$init" 2>/dev/null || true; done
		fi
	done
	((${#pids[@]} == 0)) || wait_gone 30 "${pids[@]}"
	local cgs=() targets=() t
	for n; do
		host "$n"
		if live_pid "$HD/pid"; then kill -KILL "$PID" 2>/dev/null || true; pids+=("$PID")
		elif [ ! -f "$HD/pid" ] && [ -d "$HD" ]; then kill_matching "$M"; fi # no pid file: a crash while starting
		if [ -f "$HD/cgroups" ]; then mapfile -t -O "${#cgs[@]}" cgs <"$HD/cgroups"; fi
	done
	if ((${#cgs[@]})); then cgroup_kill_remove "${cgs[@]}"; fi
	((${#pids[@]} == 0)) || wait_gone 10 "${pids[@]}"
	local -A mounted=()
	while read -r _ t _; do mounted[$t]=1; done </proc/mounts
	for n; do
		host "$n"
		rm -f "$HD/pid" "$HD/cgroups"
		rm -rf "/run/systemd/nspawn/propagate/$NS"
		if [ -n "${mounted[$M]:-}" ]; then targets+=("$M"); fi
	done
	if ((${#targets[@]})); then umount "${targets[@]}" 2>/dev/null || umount -l "${targets[@]}" 2>/dev/null || true; fi
}

# ---------------------------------------------------------------- lab files
write_lab_files() {
	local n kind inv ini cluster first
	: >"$RUN/hosts.tsv.new"
	for n in $(lab_hosts); do host "$n"; printf '%s\t%s\t%s\n' "$n" "$ADDR" "$KIND" >>"$RUN/hosts.tsv.new"; done
	mv "$RUN/hosts.tsv.new" "$RUN/hosts.tsv"
	cat /dev/null "$RUN"/hosts/*/known_hosts >"$RUN/known_hosts.new"
	mv "$RUN/known_hosts.new" "$RUN/known_hosts"
	for kind in full light; do
		inv=$RUN/inventory.yaml ini=$RUN/ansible-hosts.ini cluster=gpukit-lab-$ID
		if [ "$kind" = light ]; then inv=$RUN/inventory-light.yaml ini=$RUN/ansible-hosts-light.ini cluster=gpukit-lab-$ID-light; fi
		local rows=() name addr k
		while IFS=$'\t' read -r name addr k; do if [ "$k" = "$kind" ]; then rows+=("$name $addr"); fi; done <"$RUN/hosts.tsv"
		if ((${#rows[@]} == 0)); then rm -f "$inv" "$ini"; continue; fi
		{
			printf '# gpukit lab %s (%s hosts), generated by test/lab/lab.sh; removed by lab.sh release/down\n' "$ID" "$kind"
			printf 'apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: %s\nspec:\n' "$cluster"
			printf '  ssh:\n    user: deploy\n    keyFile: %s\n    knownHostsFile: %s\n' "$KEY" "$RUN/known_hosts"
			printf '  # the lab repository (flat: "deb [trusted=yes] %s ./"), served on the lab bridge\n' "$REPO_URL"
			printf '  mirrors:\n    nvidia: %s\n    kubernetes: %s\n    docker: %s\n' "$REPO_URL" "$REPO_URL" "$REPO_URL"
			printf '  hosts:\n'
			first=1
			for n in "${rows[@]}"; do
				printf '    - name: %s\n      address: %s\n' "${n% *}" "${n#* }"
				if ((first)); then printf '      roles: [control-plane]\n'; first=0; else printf '      roles: [worker]\n'; fi
			done
		} >"$inv.new"
		mv "$inv.new" "$inv"
		{
			printf '# gpukit lab %s (%s hosts) for Ansible, generated by test/lab/lab.sh\n' "$ID" "$kind"
			printf '[control_plane]\n%s ansible_host=%s\n\n[workers]\n' "${rows[0]% *}" "${rows[0]#* }"
			for n in "${rows[@]:1}"; do printf '%s ansible_host=%s\n' "${n% *}" "${n#* }"; done
			printf '\n[all:vars]\nansible_user=deploy\nansible_become=true\nansible_python_interpreter=/usr/bin/python3\n'
			printf 'ansible_ssh_private_key_file=%s\n' "$KEY"
			printf "ansible_ssh_common_args='-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes'\n" "$RUN/known_hosts"
		} >"$ini.new"
		mv "$ini.new" "$ini"
	done
}

# ---------------------------------------------------------------- lab lifecycle
# Labs started by a test record their owner (pid + start time); a lab whose owner died without
# cleaning up (a test binary killed by its timeout) is released by the next `up` with id auto.
reap_orphans() {
	local d
	for d in "$LAB"/run/*/; do
		d=${d%/}
		if [ ! -f "$d/owner" ] || live_pid "$d/owner"; then continue; fi
		log "releasing lab ${d##*/}: the test that started it is gone"
		in_lab "${d##*/}" lab_release_hosts || true
		rm -rf --one-file-system "$d" || log "warning: could not remove all of $d (lab.sh down clears it)"
	done
}
up_shared() { # under the lock: base, bridge, repository, lab id; prints the id
	base_locked
	bridge_up
	repo_ensure
	mkdir -p "$LAB/run"
	local id=$ID i
	if [ "$id" = auto ]; then
		reap_orphans
		id=
		for ((i = 2; i <= 127; i++)); do mkdir "$LAB/run/$i" 2>/dev/null && { id=$i; break; }; done # 1: the command line's
		[ -n "$id" ] || die "all lab ids are in use ($LAB/run)"
	fi
	mkdir -p "$LAB/run/$id/hosts"
	if [ -n "${GPUKIT_LAB_OWNER:-}" ] && [ ! -f "$LAB/run/$id/owner" ]; then write_pid "$GPUKIT_LAB_OWNER" "$LAB/run/$id/owner"; fi
	printf '%s' "$id"
}

UP_NEW=()
up_abort() {
	local rc=$? j
	((rc)) || return 0
	trap - EXIT INT TERM
	log "up failed or was interrupted: removing the hosts it created"
	for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if ((${#UP_NEW[@]})); then hosts_destroy "${UP_NEW[@]}"; fi
	if [ -z "$(lab_hosts)" ]; then lab_release_hosts; with_lock lab_release_tail; else write_lab_files; fi
	exit "$rc"
}
cmd_up() {
	local light=0 names=() n
	KUBE=0 FABRIC=0
	while (($#)); do
		case $1 in
		--light) light=1 ;;
		--kube) KUBE=1 ;;
		--fabric) FABRIC=1 ;;
		[0-9]*)
			if ! [[ $1 =~ ^[1-9][0-9]*$ ]] || (($1 > 254)); then die "host count must be 1..254"; fi
			for ((n = 1; n <= $1; n++)); do if ((light)); then names+=("lite-$n"); else names+=("lab-$n"); fi; done ;;
		*) check_name "$1"; names+=("$1") ;;
		esac
		shift
	done
	((${#names[@]})) || die "usage: lab.sh up [--light|--kube] N | NAME..."
	if ((KUBE && light)); then die "--kube hosts are full hosts: not with --light"; fi
	if ((FABRIC && light)); then die "--fabric hosts are full hosts: not with --light"; fi
	[ "$ID" = auto ] || check_id
	valid_delay "${GPUKIT_LAB_REBOOT_DELAY:-$REBOOT_DELAY_DEFAULT}" || die "GPUKIT_LAB_REBOOT_DELAY: seconds or never, got '$GPUKIT_LAB_REBOOT_DELAY'"
	cmd_deps
	local started=$SECONDS id
	id=$(with_lock up_shared)
	use_lab "$id"
	# a new lab: no rule of a crashed lab of the same id may still cut its hosts off
	if [ -z "$(ls -A "$RUN/hosts" 2>/dev/null)" ]; then direct_flush; fi
	log "lab $ID: starting ${#names[@]} hosts ($RUN)"
	for n in "${names[@]}"; do [ -d "$RUN/hosts/$n" ] || UP_NEW+=("$n"); done
	trap up_abort EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local running=0 failed=0 parallel=${GPUKIT_LAB_PARALLEL:-16}
	net_up "${names[@]}"
	for n in "${names[@]}"; do # in parallel: key generation, mounts and the kernel's namespace setup
		if ((running >= parallel)); then
			wait -n || failed=$((failed + 1))
			running=$((running - 1))
		fi
		{ host_prepare "$n" && host_boot "$n"; } &
		running=$((running + 1))
	done
	for ((; running > 0; running--)); do wait -n || failed=$((failed + 1)); done
	((failed == 0)) || die "$failed of ${#names[@]} hosts failed to start"
	write_lab_files
	trap - EXIT INT TERM
	log "lab $ID: ${#names[@]} hosts up in $((SECONDS - started)) s (ssh: $0 --lab $ID ssh NAME)"
	if ((light)) || [[ ${names[0]} == lite-* ]]; then printf '%s\n' "$RUN/inventory-light.yaml"; else printf '%s\n' "$RUN/inventory.yaml"; fi
}

hosts_destroy() { # hosts_destroy NAME...: stop, then delete netns and all state
	local n batch="" veths=() dirs=() end
	hosts_stop --kill "$@"
	for n; do
		host "$n"
		if [ -e "/run/netns/$NS" ]; then batch+="netns del $NS"$'\n'; fi
		veths+=("$NS")
		dirs+=("$HD")
	done
	# A netns takes its veth along when it goes; the kernel does that in the background and in
	# batches (100 hosts: ~2 s, vs 3 s to delete 100 veths one by one first). Wait for it, so
	# that the names are free again and nothing is left when this returns.
	if [ -n "$batch" ]; then ip -force -batch - <<<"$batch" >/dev/null 2>&1 || true; fi
	umount_under "${dirs[@]}"
	rm -rf --one-file-system "${dirs[@]}"
	end=$((SECONDS + 15))
	for n in "${veths[@]}"; do while [ -e "/sys/class/net/$n" ] && ((SECONDS < end)); do nap 0.1; done; done
}
lab_release_hosts() { # stop and delete every host of this lab, then sweep what a crash may have left
	check_id
	local hosts ns
	mapfile -t hosts < <(lab_hosts)
	if ((${#hosts[@]})); then hosts_destroy "${hosts[@]}"; fi
	kill_matching "$RUN/"
	for ns in $(ip netns list 2>/dev/null | awk -v p="gk$ID-" 'index($1, p) == 1 {print $1}'); do ip netns del "$ns" 2>/dev/null || true; done
	for ns in $(ip -o link show 2>/dev/null | awk -F': ' -v p="gk$ID-" 'index($2, p) == 1 {sub(/@.*/, "", $2); print $2}'); do ip link del "$ns" 2>/dev/null || true; done
	rm -rf /run/systemd/nspawn/propagate/"gk$ID-"*
	cgroup_sweep "$ID"
	umount_under "$RUN"
}
lab_release_tail() { # under the lock: forget this lab; the last lab out takes the bridge and repository down
	rm -rf --one-file-system "$RUN"
	labs_running || shared_down
}
shared_down() {
	repo_stop
	debian_stop
	proxy_stop
	registry_stop
	ip link del "$BRIDGE" 2>/dev/null || true
	ip link del "$FABRIC_BRIDGE" 2>/dev/null || true
	rmdir /run/systemd/nspawn/propagate /run/systemd/nspawn/locks /run/systemd/nspawn 2>/dev/null || true # nspawn's, if empty
	# `ip netns add` bind-mounted /run/netns onto itself; drop that once no namespace is left in it
	if mountpoint -q /run/netns && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then umount /run/netns 2>/dev/null || true; fi
	return 0
}
cmd_release() {
	check_id
	lab_release_hosts
	direct_flush
	with_lock lab_release_tail
	log "lab $ID released"
}
down_locked() {
	local d
	for d in "$LAB"/run/*/; do
		d=${d%/}
		in_lab "${d##*/}" lab_release_hosts || true
		rm -rf --one-file-system "$d" 2>/dev/null || true # what stays is swept below
	done
	# what crashes may have left, whatever the state files say
	kill_matching "$LAB/run/"
	for d in $(ip netns list 2>/dev/null | awk '$1 ~ /^gk[0-9]+-/ {print $1}'); do ip netns del "$d" 2>/dev/null || true; done
	for d in $(ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^gk[0-9]+-/ {sub(/@.*/, "", $2); print $2}'); do ip link del "$d" 2>/dev/null || true; done
	rm -rf /run/systemd/nspawn/propagate/gk[0-9]*-*
	cgroup_sweep "*"
	umount_under "$LAB/run"
	[ -d "$LAB/base/rootfs.new" ] && umount_under "$LAB/base/rootfs.new"
	direct_flush '[0-9]+'
	shared_down
	if ! rm -rf --one-file-system "$LAB/run" 2>/dev/null; then # a mount still dying
		nap 1
		umount_under "$LAB/run"
		rm -rf --one-file-system "$LAB/run"
	fi
}
cmd_down() {
	if [ -d "$LAB" ]; then with_lock down_locked; else shared_down; fi
	log "down: no lab hosts, namespaces, mounts or bridge left (base kept in $LAB/base)"
}

# ---------------------------------------------------------------- per-host commands
host_init() { # sets INIT: the host's PID 1 as this machine sees it (after `host NAME`), or fails
	local p
	INIT=
	live_pid "$HD/pid" || return 1
	p=$PID
	if [ "$KIND" = full ]; then # supervisor -> systemd-nspawn -> the host's systemd
		p=$(pgrep -P "$p" -x systemd-nspawn || true)
		p=${p%%$'\n'*}
		[ -n "$p" ] || return 1
	fi
	INIT=$(pgrep -P "$p" || true)
	INIT=${INIT%%$'\n'*}
	[ -n "$INIT" ]
}
need_host() { host "$1"; [ -d "$HD" ] || die "lab $ID has no host $1 (see: lab.sh --lab $ID status)"; }
cmd_stop() { check_id; need_host "$1"; hosts_stop "$1"; host "$1"; net_down; log "$1 stopped"; }
cmd_start() { check_id; need_host "$1"; net_up "$1"; host_prepare "$1"; host_boot "$1"; log "$1 started"; }
cmd_rekey() {
	check_id
	need_host "$1"
	local t types=() init want end=$((SECONDS + 10))
	live_pid "$HD/pid" || die "$1 is not running"
	for t in "$M"/etc/ssh/ssh_host_*_key; do t=${t##*/ssh_host_}; types+=("${t%_key}"); done
	host_keygen "$M" "$1" "${types[@]}"
	host_init || die "$1 is not running"
	init=$INIT
	if [ "$KIND" = full ]; then
		nsenter -t "$init" -m -u -i -n -p -- /bin/systemctl reload ssh.service
	else
		kill -HUP "$init" # sshd re-executes itself and loads the new keys
	fi
	read -r _ want _ <"$M/etc/ssh/ssh_host_ed25519_key.pub"
	until [[ $(ssh-keyscan -T 2 -t ed25519 "$ADDR" 2>/dev/null || true) == *" $want"* ]]; do
		((SECONDS < end)) || die "$1 still serves its old host key"
		nap 0.1
	done
	log "$1 has a new host key (known_hosts unchanged)"
}
ssh_to() { # ssh_to KNOWN_HOSTS USER ADDR [CMD...]
	local known=$1 user=$2 addr=$3
	shift 3
	ssh -F /dev/null -i "$KEY" -o IdentitiesOnly=yes -o UserKnownHostsFile="$known" \
		-o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=10 \
		-o LogLevel=ERROR "$user@$addr" "$@"
}
cmd_state() { check_id; need_host "${1:?usage: lab.sh state NAME}"; host_state; printf '%s\n' "$STATE"; }
cmd_reboot_delay() {
	check_id
	need_host "${1:?usage: lab.sh reboot-delay NAME [SECONDS|never|default]}"
	[ "$KIND" = full ] || die "$1 is a light host: it has no systemd and does not reboot"
	case ${2:-} in
	"") reboot_delay; printf '%s\n' "$DELAY"; return ;;
	default) rm -f "$HD/reboot-delay" ;;
	*) valid_delay "$2" || die "reboot delay: seconds (e.g. 0, 2.5, 30), never or default; got '$2'"
		printf '%s\n' "$2" >"$HD/reboot-delay.new" && mv -f "$HD/reboot-delay.new" "$HD/reboot-delay" ;; # a waiting supervisor reads it
	esac
	reboot_delay
	log "$1: reboot delay $DELAY"
}
cmd_keep() { # the lab outlives its test (GPUKIT_LAB_KEEP): no owner, so nothing reaps it
	check_id
	[ -d "$RUN" ] || die "no lab $ID"
	rm -f "$RUN/owner"
	log "lab $ID kept: release it with $SELF --lab $ID release"
}
cmd_ssh() {
	check_id
	local target=${1:?usage: lab.sh ssh [USER@]NAME [CMD...]} user=root name
	shift
	name=${target#*@}
	[ "$name" = "$target" ] || user=${target%@*}
	need_host "$name"
	ssh_to "$RUN/known_hosts" "$user" "$ADDR" "$@"
}
cmd_status() {
	local d n mem cg any=0 init note
	for d in "$LAB"/run/*/; do
		d=${d%/}
		use_lab "${d##*/}"
		any=1
		printf 'lab %s  %s%s\n' "$ID" "$d" "$([ -f "$d/owner" ] && printf '  (started by pid %s)' "$(cut -d' ' -f1 "$d/owner")")"
		printf '  %-10s %-14s %-6s %-10s %9s  %s\n' NAME ADDRESS KIND STATE MEMORY BOOTS/REBOOT-DELAY
		for n in $(lab_hosts); do
			host "$n"
			host_state
			mem=- note=
			if [ "$KIND" = full ]; then reboot_delay; note="$BOOTS boots, reboot delay $DELAY"; fi
			if live_pid "$HD/pid"; then
				cg=$(grep '/memory/' "$HD/cgroups" 2>/dev/null || true)
				if [ -n "$cg" ] && [ -f "$cg/memory.usage_in_bytes" ]; then # full: the host's memory cgroup
					mem="$(($(cat "$cg/memory.usage_in_bytes") / 1048576))MiB"
				elif [ "$KIND" = light ]; then # light: resident set of its sshd (PID 1 of the host)
					host_init || true
					init=$INIT
					mem=$(awk '/^VmRSS/ {printf "%.1fMiB", $2 / 1024}' "/proc/$init/status" 2>/dev/null || true)
				fi
			fi
			printf '  %-10s %-14s %-6s %-10s %9s  %s\n' "$n" "$ADDR" "$KIND" "$STATE" "$mem" "$note"
		done
	done
	((any)) || echo "no labs"
	if ip link show "$BRIDGE" >/dev/null 2>&1; then echo "bridge $BRIDGE $BRIDGE_ADDR/16 up"; else echo "bridge $BRIDGE absent"; fi
	if live_pid "$REPO_DIR/pid"; then echo "repository $REPO_URL serving $REPO_DIR/www"; else echo "repository stopped"; fi
	if live_pid "$DEBIAN_DIR/pid"; then
		echo "debian proxy $DEBIAN_URL/debian, $DEBIAN_URL/debian-security (cache $DEBIAN_DIR/cache: $(du -sh "$DEBIAN_DIR/cache" 2>/dev/null | cut -f1))"
	else echo "debian proxy stopped"; fi
	if live_pid "$REGISTRY_DIR/pid"; then echo "registry http://$REGISTRY ($REGISTRY_DIR/data: $(du -sh "$REGISTRY_DIR/data" 2>/dev/null | cut -f1))"; else echo "registry stopped"; fi
	if [ -x "$BASE/usr/sbin/sshd" ]; then echo "base $BASE ($(du -sh "$BASE" 2>/dev/null | cut -f1))"; else echo "base not built"; fi
}

main() {
	if [ "$(id -u)" != 0 ] && [ "${1:-}" != deps ]; then die "the lab needs root (namespaces, mounts, a bridge)"; fi
	use_lab "${GPUKIT_LAB_ID:-1}"
	if [ "${1:-}" = --lab ]; then use_lab "${2:?--lab needs an id}"; shift 2; fi
	local cmd=${1:-}
	shift || true
	case $cmd in
	deps | base | up | down | release | stop | start | rekey | ssh | status | state | keep | repo | _launch | _init) "cmd_$cmd" "$@" ;;
	reboot-delay) cmd_reboot_delay "$@" ;;
	debian-mirror) cmd_debian_mirror "$@" ;;
	registry) cmd_registry "$@" ;;
	proxy) cmd_proxy "$@" ;;
	direct) cmd_direct "$@" ;;
	*) sed -n '2,/^# shellcheck/p' "$SELF" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
}
main "$@"
