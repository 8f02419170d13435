# Prints what the Kubernetes layer looks at, as key=value lines; changes
# nothing: its packages (version, held), containerd's version and service,
# its config.toml, the registries' hosts.toml and ca.crt files (base64), the kubelet's
# service, and what kubeadm left: the API server's manifest, the kubelet's
# kubeconfig (its server), whether the kubelet runs a replaced binary; the pause image kubeadm {{.KubernetesVersion}} names, which
# containerd's sandbox must be.
kv() { printf '%s=%s\n' "$1" "$2"; }
{{template "pkgstate" .}}
if command -v containerd >/dev/null 2>&1; then kv containerd.version "$(containerd --version | awk '{print $3}')"; fi
kv containerd.active "$(systemctl is-active containerd 2>/dev/null || true)"
kv kubelet.enabled "$(systemctl is-enabled kubelet 2>/dev/null || true)"
kv kubelet.active "$(systemctl is-active kubelet 2>/dev/null || true)"
for f in /etc/containerd/config.toml /etc/containerd/certs.d/*/hosts.toml /etc/containerd/certs.d/*/ca.crt; do
  if [ -f "$f" ]; then kv "file $f" "$(base64 -w0 <"$f")"; fi
done
for f in /opt/cni/bin/bridge /opt/cni/bin/host-local /opt/cni/bin/loopback /opt/cni/bin/portmap; do
  if [ ! -e "$f" ]; then kv cni.missing "${f##*/}"; fi
done
if command -v kubeadm >/dev/null 2>&1; then
  kv pause.image "$(kubeadm config images list --kubernetes-version {{quote .KubernetesVersion}}{{if .ImageRepository}} --image-repository {{quote .ImageRepository}}{{end}} 2>/dev/null | grep -m 1 '/pause:' || true)"
fi
if [ -f /etc/kubernetes/manifests/kube-apiserver.yaml ]; then
  kv apiserver true
  kv apiserver.image "$(sed -n 's/^ *image: *//p' /etc/kubernetes/manifests/kube-apiserver.yaml | head -n1)"
fi
# A kubelet still running the binary an upgrade replaced: it needs a restart.
pid=$(systemctl show -P MainPID kubelet 2>/dev/null || true)
if [ -n "$pid" ] && [ "$pid" != 0 ] && readlink "/proc/$pid/exe" 2>/dev/null | grep -q ' (deleted)$'; then kv kubelet.stale true; fi
if [ -f /etc/kubernetes/kubelet.conf ]; then
  kv kubelet.server "$(awk '$1 == "server:" { print $2; exit }' /etc/kubernetes/kubelet.conf)"
fi
