# {{if .Check}}Says what the host lacks for the kubelet, one "pending: ..." line each, and
# changes nothing{{else}}Prepares a host for the kubelet{{end}}: swap off, now and at every boot (the
# kubelet's memory accounting assumes none); the overlay and br_netfilter
# modules loaded, now and at every boot (containerd's snapshots; bridged pod
# traffic through iptables); IPv4 forwarding and bridged traffic through
# iptables and ip6tables. Each step checks before it changes and says what
# it changed.
{{template "put"}}
# change WHAT CMD...: {{if .Check}}says WHAT is pending{{else}}runs CMD and says WHAT it did{{end}}.
change() {
  local what=$1
  shift
{{- if .Check}}
  echo "pending: $what"
{{- else}}
  "$@"
  echo "gpukit: $what"
{{- end}}
}
# fstab's swap entries are commented out (the original kept as
# /etc/fstab.gpukit).
fstab_swap='^([[:space:]]*[^#[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+swap[[:space:]].*)$'
comment_swap() {
  cp -p /etc/fstab /etc/fstab.gpukit
  sed -i -E "s/$fstab_swap/# gpukit (kubelet needs swap off): \\1/" /etc/fstab
}
if [ -n "$(swapon --noheadings --show=NAME 2>/dev/null)" ]; then change "swap turned off" swapoff -a; fi
if grep -qE "$fstab_swap" /etc/fstab 2>/dev/null; then change "swap entries of /etc/fstab commented out" comment_swap; fi
# swap units systemd made on its own are masked
for unit in $(systemctl list-units --type swap --all --plain --no-legend 2>/dev/null | awk '{print $1}'); do
  if [ "$(systemctl is-enabled "$unit" 2>/dev/null)" != masked ]; then change "$unit masked" systemctl mask -q "$unit"; fi
done
modules=/etc/modules-load.d/gpukit-kubernetes.conf
if [ "$(cat "$modules" 2>/dev/null)" != $'overlay\nbr_netfilter' ]; then
  change "overlay and br_netfilter load at boot" put "$modules" $'overlay\nbr_netfilter'
fi
# present whether loaded as modules or built into the kernel
if ! grep -qw overlay /proc/filesystems; then change "overlay loaded" modprobe overlay; fi
if [ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then change "br_netfilter loaded" modprobe br_netfilter; fi
conf=/etc/sysctl.d/99-gpukit-kubernetes.conf
sysctls=$'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1'
if [ "$(cat "$conf" 2>/dev/null)" != "$sysctls" ]; then change "$conf written" put "$conf" "$sysctls"; fi
for kv in net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1; do
  k=${kv%=*}
  if [ "$(sysctl -n "$k" 2>/dev/null)" != "${kv#*=}" ]; then change "$kv" sysctl -q -w "$kv"; fi
done
