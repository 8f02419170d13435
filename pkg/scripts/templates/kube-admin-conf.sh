# Prints the cluster's admin kubeconfig (a secret: it holds the admin's
# client key).
cat /etc/kubernetes/admin.conf
