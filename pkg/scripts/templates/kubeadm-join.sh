# Joins the cluster: kubeadm join with the configuration gpukit rendered
# ($1: it holds the bootstrap token{{if .ControlPlane}} and the certificate key{{end}}; it comes on stdin
# and lives in a 0600 file only while kubeadm runs). kubeadm's output goes
# to {{.LogFile}}; its last lines are printed when it fails.
umask 077
mkdir -p "$(dirname {{quote .ConfigFile}})" "$(dirname {{quote .LogFile}})"
trap 'rm -f {{quote .ConfigFile}}' EXIT
printf '%s\n' "$1" >{{quote .ConfigFile}}
if ! kubeadm join --config {{quote .ConfigFile}} >{{quote .LogFile}} 2>&1; then
  tail -n 25 {{quote .LogFile}} >&2
  exit 1
fi
echo "gpukit: joined as a {{if .ControlPlane}}control plane{{else}}worker{{end}}"
