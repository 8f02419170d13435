# Prints the cluster's nodes as the API lists them (JSON), as a control
# plane sees them; changes nothing.
KUBECONFIG=/etc/kubernetes/admin.conf kubectl get nodes -o json
