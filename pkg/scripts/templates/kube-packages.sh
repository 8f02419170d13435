# Installs kubeadm, kubelet and kubectl {{.Version}} from the Kubernetes
# package repository of their minor, holds them against upgrades (a node's
# Kubernetes changes only through an upgrade gpukit runs) and enables the
# kubelet, which kubeadm configures and starts.
{{template "pm"}}
{{template "put"}}
{{template "pkgver" .}}
{{template "fetch"}}
base={{quote .RepoURL}}
{{- if eq .Family.PackageManager "apt"}}
keyring=/etc/apt/keyrings/kubernetes-apt-keyring.asc
changed=0
if [ ! -s "$keyring" ]; then
  mkdir -p /etc/apt/keyrings
  tmp=$(mktemp)
  fetch "${base}Release.key" "$tmp"
  install -m 0644 "$tmp" "$keyring"
  rm -f "$tmp"
  changed=1
fi
# One minor's repository at a time: another minor's would offer its
# versions as upgrades.
if put /etc/apt/sources.list.d/kubernetes.list "deb [signed-by=$keyring] $base /"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
{{- else}}
put /etc/yum.repos.d/kubernetes.repo "[kubernetes]
name=Kubernetes
baseurl=$base
enabled=1
gpgcheck=1
gpgkey=${base}repodata/repomd.xml.key" || true
{{- end}}
{{template "pinned" .}}
systemctl enable -q kubelet
echo "gpukit: kubeadm $(kubeadm version -o short), kubelet $(kubelet --version | cut -d' ' -f2)"
