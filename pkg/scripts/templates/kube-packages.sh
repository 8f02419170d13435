# Installs kubeadm, kubelet and kubectl {{.Version}} from the Kubernetes
# package repository of their minor, holds them against upgrades (a node's
# Kubernetes changes only through an upgrade gpukit runs) and enables the
# kubelet, which kubeadm configures and starts.
{{template "pm"}}
{{template "put"}}
{{template "pkgver" .}}
{{template "fetch"}}
{{template "keys"}}
base={{quote .RepoURL}}
{{- if eq .Family.PackageManager "apt"}}
changed=0
keyring=/etc/apt/keyrings/kubernetes-apt-keyring.gpg
if pinned_key "${base}"{{quote .Key.File}} "$keyring" gpg {{quoteEach .Key.Fingerprints}}; then changed=1; fi
# One minor's repository at a time: another minor's would offer its
# versions as upgrades.
if put /etc/apt/sources.list.d/kubernetes.list "deb [signed-by=$keyring] $base /"; then changed=1; fi
if [ "$changed" = 1 ]; then apt-get update -q; fi
{{- else}}
key=/etc/pki/rpm-gpg/gpukit-kubernetes.asc
pinned_key "${base}"{{quote .Key.File}} "$key" asc {{quoteEach .Key.Fingerprints}} || true
put /etc/yum.repos.d/kubernetes.repo "[kubernetes]
name=Kubernetes
baseurl=$base
enabled=1
gpgcheck=1
gpgkey=file://$key" || true
{{- end}}
{{template "pinned" .}}
systemctl enable -q kubelet
echo "gpukit: kubeadm $(kubeadm version -o short), kubelet $(kubelet --version | cut -d' ' -f2)"
