{{- if eq .Step "version"}}
# Reads the version the cluster's API server reports (kubectl with the
# admin kubeconfig), for gpukit upgrade kubernetes' check.
kubectl --kubeconfig /etc/kubernetes/admin.conf get --raw /version
{{- else if eq .Step "plan"}}
# kubeadm upgrade plan for {{.Version}}: what kubeadm will change, shown
# before anything is (kubeadm {{.Version}} is installed first).
kubeadm upgrade plan {{quote .Version}}{{range .IgnorePreflightErrors}} --ignore-preflight-errors={{quote .}}{{end}} 2>&1
{{- else if eq .Step "apply"}}
# Moves the cluster's control plane to {{.Version}} on the first control
# plane: kubeadm upgrade apply (the static pods, etcd, the cluster's
# configuration, CoreDNS and kube-proxy). kubeadm's output goes to
# {{.LogFile}}; its last lines are printed when it fails.
mkdir -p "$(dirname {{quote .LogFile}})"
if ! kubeadm upgrade apply {{quote .Version}} --yes{{range .IgnorePreflightErrors}} --ignore-preflight-errors={{quote .}}{{end}} >{{quote .LogFile}} 2>&1; then
  tail -n 25 {{quote .LogFile}} >&2
  exit 1
fi
grep -E '^\[upgrade\] (SUCCESS|The control plane instance)' {{quote .LogFile}} || true
echo "gpukit: kubeadm upgrade apply {{.Version}} done"
{{- else if eq .Step "node"}}
# Moves this node to the cluster's new version: kubeadm upgrade node (a
# control plane's static pods; every node's kubelet configuration).
mkdir -p "$(dirname {{quote .LogFile}})"
if ! kubeadm upgrade node{{range .IgnorePreflightErrors}} --ignore-preflight-errors={{quote .}}{{end}} >{{quote .LogFile}} 2>&1; then
  tail -n 25 {{quote .LogFile}} >&2
  exit 1
fi
echo "gpukit: kubeadm upgrade node done ($(kubeadm version -o short))"
{{- else}}
# Restarts the kubelet on its new binary and waits until it answers.
systemctl daemon-reload
systemctl restart kubelet
healthy() {
  if command -v curl >/dev/null 2>&1; then
    [ "$(curl -fsS --max-time 2 http://127.0.0.1:10248/healthz 2>/dev/null)" = ok ]
  else
    # no curl: bash's own connection, HTTP/1.0
    exec 3<>/dev/tcp/127.0.0.1/10248 2>/dev/null || return 1
    printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3
    local body
    body=$(timeout 2 cat <&3 | tail -n 1)
    exec 3>&-
    [ "$body" = ok ]
  fi
}
for _ in $(seq 60); do
  if healthy; then
    echo "gpukit: kubelet $(kubelet --version | cut -d' ' -f2) running"
    exit 0
  fi
  sleep 2
done
echo "gpukit: the kubelet does not answer on 127.0.0.1:10248/healthz 120s after its restart" >&2
systemctl status kubelet --no-pager -l 2>&1 | tail -n 15 >&2 || true
exit 1
{{- end}}
