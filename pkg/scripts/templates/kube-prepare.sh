# Prepares a host for the kubelet: swap off, now and at every boot (the
# kubelet's memory accounting assumes none); the overlay and br_netfilter
# modules loaded, now and at every boot (containerd's snapshots; bridged pod
# traffic through iptables); IPv4 forwarding and bridged traffic through
# iptables and ip6tables. Each step checks before it changes and says what
# it changed.
{{template "put"}}
if [ -n "$(swapon --noheadings --show=NAME 2>/dev/null)" ]; then
  swapoff -a
  echo "gpukit: swap turned off"
fi
# fstab's swap entries are commented out (the original kept as
# /etc/fstab.gpukit), and swap units systemd made on its own are masked.
if grep -qE '^[[:space:]]*[^#[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+swap[[:space:]]' /etc/fstab 2>/dev/null; then
  cp -p /etc/fstab /etc/fstab.gpukit
  sed -i -E 's/^([[:space:]]*[^#[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+swap[[:space:]].*)$/# gpukit (kubelet needs swap off): \1/' /etc/fstab
  echo "gpukit: swap entries of /etc/fstab commented out"
fi
for unit in $(systemctl list-units --type swap --all --plain --no-legend 2>/dev/null | awk '{print $1}'); do
  if [ "$(systemctl is-enabled "$unit" 2>/dev/null)" != masked ]; then
    systemctl mask -q "$unit"
    echo "gpukit: $unit masked"
  fi
done
if put /etc/modules-load.d/gpukit-kubernetes.conf $'overlay\nbr_netfilter'; then
  echo "gpukit: overlay and br_netfilter load at boot"
fi
# Present whether loaded as modules or built into the kernel:
if ! grep -qw overlay /proc/filesystems; then
  modprobe overlay
  echo "gpukit: overlay loaded"
fi
if [ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
  modprobe br_netfilter
  echo "gpukit: br_netfilter loaded"
fi
conf=/etc/sysctl.d/99-gpukit-kubernetes.conf
if put "$conf" $'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1'; then
  echo "gpukit: $conf written"
fi
for kv in net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1; do
  k=${kv%=*}
  if [ "$(sysctl -n "$k")" != "${kv#*=}" ]; then
    sysctl -q -w "$kv"
    echo "gpukit: $kv"
  fi
done
