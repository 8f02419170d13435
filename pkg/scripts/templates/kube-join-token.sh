# Prints the join command of a new bootstrap token that expires after
# {{.TTL}} (a secret: the caller redacts it; it names the cluster CA's public
# key hash too){{if .UploadCerts}}, after uploading the control-plane certificates anew
# (they expire after two hours) under the key $1{{end}}.
export KUBECONFIG=/etc/kubernetes/admin.conf
{{- if .UploadCerts}}
kubeadm init phase upload-certs --upload-certs --certificate-key "$1" >/dev/null
{{- end}}
kubeadm token create --ttl {{quote .TTL}} --description 'gpukit join' --print-join-command
