// Package ansible converts an Ansible inventory, as written for NVIDIA DeepOps,
// Kubespray or NVIDIA Cloud Native Stack, into a gpukit inventory.
//
// Operators arrive with years of Ansible inventories; retyping 200 hosts is
// where mistakes happen. Convert reads the INI or YAML inventory (and the
// group_vars / host_vars files that go with it), maps groups to gpukit roles
// and connection variables to gpukit SSH settings, and says in a Note every
// place where it dropped or changed something. Render writes the result as a
// cluster.yaml whose header lists those notes, so nothing is lost silently.
// The result is also run through pkg/inventory's own loader: a version gpukit
// cannot install falls back to its default with a note, and whatever the
// loader still objects to is reported as a note too.
//
// A KubeKey v4 Inventory (apiVersion kubekey.kubesphere.io/v1, kind
// Inventory) is Ansible's model written as a Kubernetes object, and converts
// the same way: spec.hosts are the hosts, spec.groups their groups,
// spec.vars, the groups' vars and the hosts' own entries their variables
// (with KubeKey's precedence), and connector.host, .port, .user, .password,
// .private_key and .type stand for ansible_host, ansible_port, ansible_user,
// ansible_password, ansible_ssh_private_key_file and ansible_connection. As
// in KubeKey, an unset user is root and the password is the sudo password
// too. Any other YAML document with an apiVersion (a KubeKey v3 Cluster, a
// k0sctl file, a gpukit inventory) is refused with an error naming what it is.
//
// Two rules are never bent: secrets are never copied into the output (they
// become environment variable references), and SSH host key checking is never
// switched off (Ansible's StrictHostKeyChecking=no becomes a note pointing at
// --accept-new-host-keys).
//
// # Mapping
//
//	Ansible                                          gpukit
//	kube_control_plane, kube-master, kube_master,    role control-plane
//	  master, masters, control_plane
//	kube_node, kube-node, node, nodes, workers,      role worker
//	  kube_worker (KubeKey)
//	kube_ingress, kube-ingress, ingress              role ingress
//	etcd                                             note (etcd is stacked on control planes;
//	                                                   an etcd-only host is left out)
//	slurm, slurm-*, slurm_*                          note (Slurm is not installed); Slurm-only hosts left out
//	k8s_cluster, k8s-cluster, all, ungrouped         structure only: children expanded, vars applied
//	bastion (Kubespray)                              ssh.bastion; the host is not a cluster member
//	calico_rr, other groups                          note; hosts with no role are left out
//	ansible_host, ansible_ssh_host                   address (else the name, if an IP or DNS name)
//	ansible_user, ansible_ssh_user                   ssh.user (spec.ssh when all hosts agree)
//	ansible_port, ansible_ssh_port, host:port        ssh.port
//	ansible_ssh_private_key_file                     ssh.keyFile
//	ansible_timeout, ansible_ssh_timeout             ssh.connectTimeout
//	ansible_become                                   ssh.sudo.enabled
//	ansible_become_password/_pass, ansible_sudo_pass ssh.sudo.password {env: GPUKIT_SUDO_PASSWORD}
//	ansible_password, ansible_ssh_pass               ssh.password {env: GPUKIT_SSH_PASSWORD}
//	ansible_ssh_common_args / _extra_args            ProxyJump, -J, ProxyCommand "ssh -W %h:%p" or
//	                                                   "ssh ... nc %h %p" -> ssh.bastion; -l/-p/-i,
//	                                                   User/Port/IdentityFile/ConnectTimeout,
//	                                                   UserKnownHostsFile -> ssh fields;
//	                                                   StrictHostKeyChecking=no -> note
//	node_labels, node_taints (Kubespray)             labels, taints
//	kube_version, k8s_version                        versions.kubernetes (leading v dropped)
//	container_manager, container_runtime             versions.runtime (containerd only)
//	containerd_version                               versions.containerRuntime
//	nvidia_driver_version, gpu_driver_version,       versions.nvidiaDriver
//	  gpu_operator_driver_version,
//	  nvidia_driver_package_version, *_branch
//	cuda_version ("cuda-toolkit-12-8")               versions.cuda ("12.8")
//	nvidia_container_toolkit_version                 versions.containerToolkit
//	kube_pods_subnet, kube_service_addresses         network.podCIDR, network.serviceCIDR
//	kube_network_plugin (calico, flannel, cilium)    network.cni
//
// Host names become RFC 1123 labels (they are Kubernetes node names); runs of
// three or more hosts with consecutive numbers and addresses and equal
// settings are folded into one ranged entry (gpu-[001:197] at
// 10.0.1.[1:197]). Variable precedence follows Ansible: all, then parent
// groups before child groups (ansible_group_priority, then name, among
// siblings), group_vars files over the inventory's [group:vars], host
// variables last.
package ansible
