package ansible

// varClass says how the conversion treats an Ansible variable.
type varClass int

const (
	varUnknown  varClass = iota // no gpukit equivalent: listed in a note
	varMapped                   // read into the gpukit inventory
	varInternal                 // only meaningful to Ansible itself: dropped silently
	varAdvice                   // known, not mapped, with a specific explanation
)

// classifyVar sorts variable names. The mapped ones are exactly those read
// by connection.go, mapping.go and clustervars.go.
func classifyVar(key string) (varClass, string) {
	switch key {
	case "ansible_host", "ansible_ssh_host",
		"ansible_user", "ansible_ssh_user",
		"ansible_port", "ansible_ssh_port",
		"ansible_ssh_private_key_file", "ansible_private_key_file",
		"ansible_become", "ansible_sudo", "ansible_become_method", "ansible_become_user",
		"ansible_become_password", "ansible_become_pass", "ansible_sudo_password", "ansible_sudo_pass",
		"ansible_password", "ansible_ssh_pass", "ansible_ssh_password",
		"ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_ssh_args",
		"ansible_timeout", "ansible_ssh_timeout",
		"ansible_connection",
		"ansible_host_key_checking", "ansible_ssh_host_key_checking",
		"node_labels", "node_taints",
		"kube_version", "k8s_version",
		"container_manager", "container_runtime",
		"containerd_version",
		"nvidia_driver_version", "gpu_driver_version", "gpu_operator_driver_version",
		"nvidia_driver_package_version", "nvidia_driver_branch", "nvidia_driver_ubuntu_branch", "nvidia_driver_rhel_branch",
		"cuda_version", "cuda_toolkit_version",
		"nvidia_container_toolkit_version",
		"kube_pods_subnet", "kube_service_addresses", "kube_network_plugin":
		return varMapped, ""
	case "ansible_python_interpreter", "ansible_group_priority", "ansible_pipelining", "ansible_ssh_pipelining",
		"ansible_shell_type", "ansible_shell_executable", "ansible_become_flags", "ansible_become_exe",
		"ansible_ssh_executable", "ansible_scp_if_ssh", "ansible_ssh_transfer_method", "ansible_sftp_batch_mode":
		return varInternal, ""
	case "ip", "access_ip":
		return varAdvice, "Kubespray binds Kubernetes to this address; gpukit has no separate node IP: the node uses the address its default route leaves by, so check that this is the network you want"
	case "internal_ipv4", "internal_ipv6":
		return varAdvice, "KubeKey binds Kubernetes and etcd to this address, which is not the one the host is reached at; gpukit has no separate node IP: the node uses the address its default route leaves by, so check that this is the network you want"
	case "connector.private_key_content":
		return varAdvice, "a private key is never copied into a gpukit inventory; write it to a file only you can read and set ssh.keyFile to it"
	case "etcd_member_name":
		return varAdvice, "gpukit runs etcd stacked on the control-plane hosts and names the members itself"
	case "k8s_gpu_mig_strategy", "mig_strategy", "enable_mig", "mig_profile", "nvidia_driver_mig":
		return varAdvice, "MIG layouts are written as spec.nvidia.mig (layout, rules by label and GPU model, or layouts of your own); the device plugin's MIG strategy is not set from the inventory yet"
	case "deepops_gpu_operator_enabled", "enable_gpu_operator", "gpu_operator_preinstalled_nvidia_software", "gpu_operator_version":
		return varAdvice, "gpukit installs the NVIDIA driver, CUDA and the container toolkit on every host itself, not through the GPU Operator; GPU monitoring comes with spec.addons.monitoring"
	case "docker_version", "docker_install", "docker_storage_options", "docker_iptables_enabled", "docker_daemon_json":
		return varAdvice, "gpukit's Kubernetes clusters run containerd, not Docker (Docker is used for swarm only)"
	case "docker_insecure_registries", "crio_insecure_registries", "containerd_insecure_registries", "docker_registry_mirrors", "containerd_registries_mirrors", "containerd_registries":
		return varAdvice, "registry mirrors are not converted; set spec.mirrors.registry to pull through a mirror (insecure registries are not configured by gpukit)"
	case "helm_enabled", "kubeconfig_localhost", "kubectl_localhost":
		return varAdvice, "gpukit installs Helm charts itself and writes the admin kubeconfig on the machine that runs it"
	case "cluster_name":
		return varAdvice, "Kubespray's cluster_name is the cluster DNS domain (cluster.local), not a name; gpukit's metadata.name is set separately"
	}
	return varUnknown, ""
}
