# Creates the cluster on its first control plane: kubeadm init with the
# configuration gpukit rendered ($1), kept in {{.ConfigFile}} (0600). kubeadm's
# output goes to {{.LogFile}}; its last lines are printed when it fails.
umask 077
mkdir -p "$(dirname {{quote .ConfigFile}})" "$(dirname {{quote .LogFile}})"
printf '%s\n' "$1" >{{quote .ConfigFile}}
if ! kubeadm init --config {{quote .ConfigFile}} >{{quote .LogFile}} 2>&1; then
  tail -n 25 {{quote .LogFile}} >&2
  exit 1
fi
echo "gpukit: kubeadm init done ($(kubeadm version -o short))"
