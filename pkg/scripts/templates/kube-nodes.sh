# Prints the names of the cluster's nodes, one per line, as a control plane
# sees them; changes nothing.
KUBECONFIG=/etc/kubernetes/admin.conf kubectl get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}'
