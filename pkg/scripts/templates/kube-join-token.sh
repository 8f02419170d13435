# Prints the join command of a new bootstrap token that expires after
# {{.TTL}} (a secret: the caller redacts it; it names the cluster CA's public
# key hash too){{if .UploadCerts}}, after uploading the control-plane certificates anew
# (they expire after two hours) under a key kubeadm makes, printed first as
# certificate-key=KEY: a secret too, so it is never an argument that a process
# list would show{{end}}.
export KUBECONFIG=/etc/kubernetes/admin.conf
{{- if .UploadCerts}}
# kubeadm prints the key on its last line.
key=$(kubeadm init phase upload-certs --upload-certs | tail -n 1)
printf 'certificate-key=%s\n' "$key"
{{- end}}
kubeadm token create --ttl {{quote .TTL}} --description 'gpukit join' --print-join-command
