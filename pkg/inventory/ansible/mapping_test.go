package ansible

import (
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// TestGroupsToRoles covers every group mapping rule.
func TestGroupsToRoles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ini       string
		hosts     []string
		notes     []string
		forbidden []string
	}{
		{
			name:  "kubespray groups",
			ini:   "[kube_control_plane]\ncp1 ansible_host=10.0.0.1\n[kube_node]\nw1 ansible_host=10.0.1.1\n[k8s_cluster:children]\nkube_control_plane\nkube_node\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
		},
		{
			name:  "legacy dash names",
			ini:   "[kube-master]\ncp1 ansible_host=10.0.0.1\n[kube-node]\nw1 ansible_host=10.0.1.1\n[k8s-cluster:children]\nkube-master\nkube-node\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
		},
		{
			name:  "legacy underscore kube_master",
			ini:   "[kube_master]\ncp1 ansible_host=10.0.0.1\n[kube_node]\nw1 ansible_host=10.0.1.1\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
		},
		{
			name:  "cloud native stack master and nodes",
			ini:   "[master]\ncp1 ansible_host=10.0.0.1\n[nodes]\nw1 ansible_host=10.0.1.1\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
		},
		{
			name:  "plain node group",
			ini:   "[master]\ncp1 ansible_host=10.0.0.1\n[node]\nw1 ansible_host=10.0.1.1\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
		},
		{
			name:  "control plane that is also a worker",
			ini:   "[kube_control_plane]\nn1 ansible_host=10.0.0.1\n[kube_node]\nn1\n",
			hosts: []string{"n1 10.0.0.1 control-plane,worker"},
		},
		{
			name:  "ingress groups",
			ini:   "[kube_control_plane]\ncp1 ansible_host=10.0.0.1\n[kube_node]\nw1 ansible_host=10.0.1.1\nw2 ansible_host=10.0.1.2\n[kube_ingress]\nw1\n[ingress]\nw2\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker,ingress", "w2 10.0.1.2 worker,ingress"},
		},
		{
			name:  "stacked etcd is noted",
			ini:   "[kube_control_plane]\ncp1 ansible_host=10.0.0.1\n[etcd:children]\nkube_control_plane\n[kube_node]\nw1 ansible_host=10.0.1.1\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
			notes: []string{"inventory.ini:3: group etcd: gpukit runs etcd stacked on the control-plane hosts, which are the etcd hosts here"},
		},
		{
			name:  "etcd-only host is reported, not converted",
			ini:   "[kube_control_plane]\ncp1 ansible_host=10.0.0.1\n[etcd]\ncp1\ne1 ansible_host=10.0.9.1\n[kube_node]\nw1 ansible_host=10.0.1.1\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
			notes: []string{
				"inventory.ini:5: host e1: not converted: etcd only, and gpukit runs etcd stacked on the control-plane hosts",
				"group etcd: gpukit runs etcd stacked on the control-plane hosts (cp1), not on the etcd group's hosts",
			},
		},
		{
			name:  "etcd on a worker",
			ini:   "[kube_control_plane]\ncp1 ansible_host=10.0.0.1\n[etcd]\ncp1\nw1\n[kube_node]\nw1 ansible_host=10.0.1.1\n",
			hosts: []string{"cp1 10.0.0.1 control-plane", "w1 10.0.1.1 worker"},
			notes: []string{"host w1: is in etcd but not a control plane: it is converted without etcd"},
		},
		{
			name: "slurm groups are reported",
			ini: "[kube_control_plane]\nmgmt01 ansible_host=10.0.0.1\n[kube_node]\ngpu01 ansible_host=10.0.2.1\n" +
				"[slurm-master]\nlogin01 ansible_host=10.0.1.1\n[slurm-node]\ngpu01\n[slurm_cache:children]\nslurm-master\n[slurm-metric:children]\nslurm-master\n",
			hosts: []string{"mgmt01 10.0.0.1 control-plane", "gpu01 10.0.2.1 worker"},
			notes: []string{
				"inventory.ini:6: host login01: not converted: in Slurm groups (slurm-master, slurm_cache, slurm-metric), and gpukit does not install Slurm",
				"groups slurm-master, slurm-node, slurm_cache, slurm-metric: not converted: gpukit does not install Slurm",
			},
		},
		{
			name:  "hosts left out for one reason share a note",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[slurm-login]\nlogin[01:40].example.com\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			notes: []string{"inventory.ini:4: 40 hosts (login01.example.com, login02.example.com, login03.example.com, login04.example.com, login05.example.com and 35 more): not converted: in Slurm groups (slurm-login), and gpukit does not install Slurm"},
		},
		{
			name:  "k8s_cluster children and nested groups",
			ini:   "[gpu_a100]\ng1 ansible_host=10.0.1.1\n[gpu_h100]\ng2 ansible_host=10.0.1.2\n[kube_node:children]\ngpu_a100\ngpu_h100\n[kube_control_plane]\ncp ansible_host=10.0.0.1\n[k8s_cluster:children]\nkube_control_plane\nkube_node\n[k8s_cluster:vars]\nansible_user=ubuntu\n",
			hosts: []string{"g1 10.0.1.1 worker", "g2 10.0.1.2 worker", "cp 10.0.0.1 control-plane"},
			notes: []string{"groups gpu_a100, gpu_h100: have no gpukit meaning and are ignored"},
		},
		{
			name:  "ungrouped host",
			ini:   "loose ansible_host=10.0.5.5\n[kube_control_plane]\ncp ansible_host=10.0.0.1\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			notes: []string{"inventory.ini:1: host loose: not converted: in no group that maps to a gpukit role"},
		},
		{
			name:  "calico route reflectors",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[calico_rr]\nrr1 ansible_host=10.0.7.1\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			notes: []string{"host rr1: not converted: a Calico route reflector, which gpukit does not manage"},
		},
		{
			name:  "no control plane",
			ini:   "[kube_node]\nw1 ansible_host=10.0.1.1\n",
			hosts: []string{"w1 10.0.1.1 worker"},
			notes: []string{
				"cluster: no host is in kube_control_plane (or kube-master, kube_master, master): add role control-plane",
				"spec.hosts: gpukit validation fails until this is fixed: no host has role control-plane",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := mustConvert(t, Input{Data: []byte(tt.ini), ClusterName: "c"})
			if got := hostLines(res.Cluster); !equalStrings(got, tt.hosts) {
				t.Errorf("hosts:\n got %q\nwant %q", got, tt.hosts)
			}
			requireNotes(t, res, tt.notes...)
			forbidNotes(t, res, tt.forbidden...)
		})
	}
}

// TestHostVars covers every connection variable rule.
func TestHostVars(t *testing.T) {
	t.Parallel()
	boolp := func(b bool) *bool { return &b }
	tests := []struct {
		name  string
		ini   string
		hosts []string
		check func(t *testing.T, cl inventory.Cluster)
		notes []string
	}{
		{
			name:  "address from the inventory name when it is an IP or DNS name",
			ini:   "[kube_control_plane]\n10.0.0.1\n[kube_node]\ngpu1.example.com\n",
			hosts: []string{"10-0-0-1 10.0.0.1 control-plane", "gpu1 gpu1.example.com worker"},
			notes: []string{"inventory.ini:2: host names: 2 renamed, because gpukit host names become Kubernetes node names and must be lowercase RFC 1123 labels (a-z, 0-9, '-', no dots): 10.0.0.1 -> 10-0-0-1, gpu1.example.com -> gpu1"},
		},
		{
			name:  "legacy ansible_ssh_host and ansible_ssh_user",
			ini:   "[master]\ncp ansible_ssh_host=10.0.0.1 ansible_ssh_user=nvidia\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			check: func(t *testing.T, cl inventory.Cluster) {
				if cl.Spec.SSH.User != "nvidia" {
					t.Errorf("spec.ssh.user = %q", cl.Spec.SSH.User)
				}
			},
		},
		{
			name:  "a name that is no address leaves the address empty",
			ini:   "[kube_control_plane]\nGPU_01\n",
			hosts: []string{"gpu-01  control-plane"},
			notes: []string{
				"inventory.ini:2: host GPU_01: has no ansible_host and its name is not an IP address or DNS name",
				"inventory.ini:2: host names: 1 renamed, because gpukit host names become Kubernetes node names and must be lowercase RFC 1123 labels (a-z, 0-9, '-', no dots): GPU_01 -> gpu-01",
			},
		},
		{
			name:  "user shared by all hosts goes to spec.ssh",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[kube_node]\nw ansible_host=10.0.1.1\n[all:vars]\nansible_user=ubuntu\nansible_ssh_private_key_file='~/.ssh/id_ed25519'\nansible_port=2222\n",
			hosts: []string{"cp 10.0.0.1 control-plane", "w 10.0.1.1 worker"},
			check: func(t *testing.T, cl inventory.Cluster) {
				s := cl.Spec.SSH
				if s.User != "ubuntu" || s.KeyFile != "~/.ssh/id_ed25519" || s.Port != 2222 {
					t.Errorf("spec.ssh = %+v", s)
				}
				for _, h := range cl.Spec.Hosts {
					if h.SSH != nil {
						t.Errorf("host %s has ssh %+v, want none", h.Name, *h.SSH)
					}
				}
			},
		},
		{
			name:  "users that differ stay per host",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_user=admin\n[kube_node]\nw ansible_host=10.0.1.1 ansible_user=ubuntu\n",
			hosts: []string{"cp 10.0.0.1 control-plane", "w 10.0.1.1 worker"},
			check: func(t *testing.T, cl inventory.Cluster) {
				if cl.Spec.SSH.User != "" {
					t.Errorf("spec.ssh.user = %q, want empty", cl.Spec.SSH.User)
				}
				if u := cl.Spec.Hosts[0].SSH.User; u != "admin" {
					t.Errorf("cp user = %q", u)
				}
				if u := cl.Spec.Hosts[1].SSH.User; u != "ubuntu" {
					t.Errorf("w user = %q", u)
				}
			},
		},
		{
			name:  "missing user is pointed out",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			notes: []string{"spec.ssh.user: 1 host(s) have no ansible_user (cp): Ansible logs in as the user who runs it, gpukit as root"},
		},
		{
			name:  "port from host:port and an invalid port",
			ini:   "[kube_control_plane]\ncp:2200 ansible_host=10.0.0.1\n[kube_node]\nw ansible_host=10.0.1.1 ansible_port=99999\n",
			hosts: []string{"cp 10.0.0.1 control-plane", "w 10.0.1.1 worker"},
			check: func(t *testing.T, cl inventory.Cluster) {
				if p := cl.Spec.Hosts[0].SSH.Port; p != 2200 {
					t.Errorf("cp port = %d", p)
				}
				if cl.Spec.Hosts[1].SSH != nil {
					t.Errorf("w ssh = %+v, want none", *cl.Spec.Hosts[1].SSH)
				}
			},
			notes: []string{"inventory.ini:4: variable ansible_port: port \"99999\" is not a number between 1 and 65535"},
		},
		{
			name:  "become turns sudo on",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[all:vars]\nansible_user=ubuntu\nansible_become=true\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			check: func(t *testing.T, cl inventory.Cluster) {
				if s := cl.Spec.SSH.Sudo; s == nil || s.Enabled == nil || !*s.Enabled || s.Password != nil {
					t.Errorf("spec.ssh.sudo = %+v", s)
				}
			},
		},
		{
			name:  "become false, other methods and users are reported",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_user=ubuntu ansible_become=no ansible_become_method=su ansible_become_user=admin\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			notes: []string{
				"variable ansible_become: ansible_become is false, which is not converted",
				"variable ansible_become_method: gpukit escalates with sudo only; become method \"su\" is not supported",
				"variable ansible_become_user: gpukit always becomes root; become user \"admin\" is not converted",
			},
		},
		{
			name:  "become password becomes an environment variable",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[all:vars]\nansible_user=ubuntu\nansible_become=true\nansible_become_password=hunter2\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			check: func(t *testing.T, cl inventory.Cluster) {
				want := inventory.Sudo{Enabled: boolp(true), Password: &inventory.SecretRef{Env: EnvSudoPassword}}
				if s := cl.Spec.SSH.Sudo; s == nil || *s.Enabled != *want.Enabled || *s.Password != *want.Password {
					t.Errorf("spec.ssh.sudo = %+v", s)
				}
			},
			notes: []string{"inventory.ini:6: variable ansible_become_password: the sudo password is never copied into a gpukit inventory; it is read from the environment variable GPUKIT_SUDO_PASSWORD"},
		},
		{
			name:  "legacy sudo pass and ssh pass (Cloud Native Stack)",
			ini:   "[master]\nlocalhost ansible_ssh_user=nvidia ansible_ssh_pass=s3cret! ansible_sudo_pass=s3cret! ansible_connection=local\n",
			hosts: []string{"localhost localhost control-plane"},
			check: func(t *testing.T, cl inventory.Cluster) {
				s := cl.Spec.SSH
				if s.Password == nil || s.Password.Env != EnvSSHPassword || s.Password.Value != "" {
					t.Errorf("spec.ssh.password = %+v", s.Password)
				}
				if s.Sudo == nil || s.Sudo.Password == nil || s.Sudo.Password.Env != EnvSudoPassword {
					t.Errorf("spec.ssh.sudo = %+v", s.Sudo)
				}
			},
			notes: []string{
				"variable ansible_ssh_pass: the SSH password is never copied into a gpukit inventory; it is read from the environment variable GPUKIT_SSH_PASSWORD",
				"variable ansible_sudo_pass: the sudo password is never copied",
				"variable ansible_connection: ansible_connection=local is not converted: gpukit reaches every host over SSH",
			},
		},
		{
			name:  "different passwords get different variables",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_password=a\n[kube_node]\nw1 ansible_host=10.0.1.1 ansible_password=b\nw2 ansible_host=10.0.1.2 ansible_password=a\n",
			hosts: []string{"cp 10.0.0.1 control-plane", "w1 10.0.1.1 worker", "w2 10.0.1.2 worker"},
			check: func(t *testing.T, cl inventory.Cluster) {
				got := []string{cl.Spec.Hosts[0].SSH.Password.Env, cl.Spec.Hosts[1].SSH.Password.Env, cl.Spec.Hosts[2].SSH.Password.Env}
				want := []string{"GPUKIT_SSH_PASSWORD", "GPUKIT_SSH_PASSWORD_2", "GPUKIT_SSH_PASSWORD"}
				if !equalStrings(got, want) {
					t.Errorf("password env = %q, want %q", got, want)
				}
			},
			notes: []string{"(used by cp, w2)", "GPUKIT_SSH_PASSWORD_2, so export it before running gpukit (used by w1)"},
		},
		{
			name:  "ProxyCommand bastion and StrictHostKeyChecking=no",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[all:vars]\nansible_user=ubuntu\nansible_ssh_common_args='-o StrictHostKeyChecking=no -o ProxyCommand=\"ssh -W %h:%p -q jump@bastion.example.com -p 2201\"'\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			check: func(t *testing.T, cl inventory.Cluster) {
				b := cl.Spec.SSH.Bastion
				if b == nil || b.Address != "bastion.example.com" || b.User != "jump" || b.Port != 2201 {
					t.Errorf("bastion = %+v", b)
				}
			},
			notes: []string{"inventory.ini:5: variable ansible_ssh_common_args: StrictHostKeyChecking=no / UserKnownHostsFile=/dev/null: gpukit keeps SSH host key checking on", "--accept-new-host-keys"},
		},
		{
			name:  "ProxyJump and -J",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_ssh_common_args='-o ProxyJump=ops@10.9.9.9:2022'\n[kube_node]\nw ansible_host=10.0.1.1 ansible_ssh_extra_args='-J 10.9.9.8'\n",
			hosts: []string{"cp 10.0.0.1 control-plane", "w 10.0.1.1 worker"},
			check: func(t *testing.T, cl inventory.Cluster) {
				if b := cl.Spec.Hosts[0].SSH.Bastion; b == nil || *b != (inventory.Bastion{Address: "10.9.9.9", User: "ops", Port: 2022}) {
					t.Errorf("cp bastion = %+v", b)
				}
				if b := cl.Spec.Hosts[1].SSH.Bastion; b == nil || *b != (inventory.Bastion{Address: "10.9.9.8"}) {
					t.Errorf("w bastion = %+v", b)
				}
			},
		},
		{
			name:  "unconvertible proxies are reported",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_ssh_common_args='-o ProxyJump=a,b'\n[kube_node]\nw ansible_host=10.0.1.1 ansible_ssh_common_args='-o \"ProxyCommand=sshpass -p topsecret ssh -W %h:%p b\" -o ControlMaster=auto'\n",
			hosts: []string{"cp 10.0.0.1 control-plane", "w 10.0.1.1 worker"},
			notes: []string{
				"ProxyJump \"a,b\" chains several jump hosts; gpukit supports one",
				"ProxyCommand \"sshpass ...\" is not an ssh command",
				"OpenSSH options ControlMaster have no gpukit equivalent",
			},
		},
		{
			name:  "host key checking variable and known hosts file",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_host_key_checking=false ansible_ssh_common_args='-o UserKnownHostsFile=~/.ssh/lab_known_hosts -o ConnectTimeout=30'\n",
			hosts: []string{"cp 10.0.0.1 control-plane"},
			check: func(t *testing.T, cl inventory.Cluster) {
				if s := cl.Spec.SSH; s.KnownHostsFile != "~/.ssh/lab_known_hosts" || s.ConnectTimeout != "30s" {
					t.Errorf("spec.ssh = %+v", s)
				}
			},
			notes: []string{"variable ansible_host_key_checking: gpukit keeps SSH host key checking on"},
		},
		{
			name:  "templates are not evaluated",
			ini:   "[kube_control_plane]\ncp ansible_host=\"{{ lookup('env', 'CP_IP') }}\"\n",
			hosts: []string{"cp  control-plane"},
			notes: []string{"variable ansible_host: the value \"{{ lookup('env', 'CP_IP') }}\" is a Jinja2 template that only Ansible can evaluate"},
		},
		{
			name:  "kubespray node labels and taints",
			ini:   "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[kube_node]\nw ansible_host=10.0.1.1 node_labels=\"{'nvidia.com/gpu.product': 'H100', 'rack': 'r12'}\" node_taints=\"['dedicated=ml:NoSchedule']\"\n",
			hosts: []string{"cp 10.0.0.1 control-plane", "w 10.0.1.1 worker"},
			check: func(t *testing.T, cl inventory.Cluster) {
				w := cl.Spec.Hosts[1]
				if w.Labels["nvidia.com/gpu.product"] != "H100" || w.Labels["rack"] != "r12" || len(w.Labels) != 2 {
					t.Errorf("labels = %v", w.Labels)
				}
				if !equalStrings(w.Taints, []string{"dedicated=ml:NoSchedule"}) {
					t.Errorf("taints = %v", w.Taints)
				}
			},
		},
		{
			name:  "unknown and advised host variables are grouped by name",
			ini:   "[kube_control_plane]\nn1 ansible_host=10.0.0.1 ip=10.3.0.1 etcd_member_name=etcd1\nn2 ansible_host=10.0.0.2 ip=10.3.0.2 etcd_member_name=etcd2\nn3 ansible_host=10.0.0.3 ip=10.3.0.3 rack=a\n",
			hosts: []string{"n[1:3] 10.0.0.[1:3] control-plane"},
			notes: []string{
				"inventory.ini:2: variable ip: set on 3 host(s) (n1, n2, n3), not converted: Kubespray binds Kubernetes to this address",
				"inventory.ini:2: variable etcd_member_name: set on 2 host(s) (n1, n2), not converted: gpukit runs etcd stacked",
				"inventory.ini:4: variable rack: set on 1 host(s) (n3), not converted: no gpukit equivalent",
			},
		},
		{
			name: "fully qualified names keep their first label unless it collides",
			ini:  "[kube_control_plane]\ngpu01.rack1.example.com\n[kube_node]\ngpu02.rack1.example.com\ngpu02.rack2.example.com\nGPU03.rack2.example.com\n",
			hosts: []string{
				"gpu01 gpu01.rack1.example.com control-plane",
				"gpu02-rack1-example-com gpu02.rack1.example.com worker",
				"gpu02-rack2-example-com gpu02.rack2.example.com worker",
				"gpu03 GPU03.rack2.example.com worker",
			},
		},
		{
			name:  "sanitised names that collide get a suffix",
			ini:   "[kube_control_plane]\nGPU_1 ansible_host=10.0.0.1\ngpu-1 ansible_host=10.0.0.2\n",
			hosts: []string{"gpu-1 10.0.0.1 control-plane", "gpu-1-2 10.0.0.2 control-plane"},
			notes: []string{"inventory.ini:3: host names: 1 renamed with a suffix, because their RFC 1123 form was already taken: gpu-1 -> gpu-1-2", "inventory.ini:2: host names: 1 renamed, because"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := mustConvert(t, Input{Data: []byte(tt.ini), ClusterName: "c"})
			if got := hostLines(res.Cluster); !equalStrings(got, tt.hosts) {
				t.Errorf("hosts:\n got %q\nwant %q", got, tt.hosts)
			}
			if tt.check != nil {
				tt.check(t, res.Cluster)
			}
			requireNotes(t, res, tt.notes...)
		})
	}
}

// TestSecretsNeverReachTheOutput checks passwords in every spelling stay out
// of the rendered file and the notes.
func TestSecretsNeverReachTheOutput(t *testing.T) {
	t.Parallel()
	const secret = "Sup3r-S3cret"
	ini := "[kube_control_plane]\ncp ansible_host=10.0.0.1 ansible_password=" + secret + "\n[kube_node]\nw ansible_host=10.0.1.1 ansible_ssh_pass=" + secret +
		" ansible_become_pass=" + secret + " ansible_ssh_common_args='-o ProxyCommand=\"sshpass -p " + secret + " ssh -W %h:%p b\"'\n" +
		"[all:vars]\nansible_become_password=" + secret + "\nansible_sudo_pass=" + secret + "\n"
	res := mustConvert(t, Input{Data: []byte(ini), ClusterName: "c"})
	out := Render(res)
	if strings.Contains(string(out), secret) {
		t.Fatalf("the secret reached the rendered inventory:\n%s", out)
	}
	if strings.Contains(notesText(res), secret) {
		t.Fatalf("the secret reached the notes:\n%s", notesText(res))
	}
	if !strings.Contains(string(out), "env: GPUKIT_SUDO_PASSWORD") || !strings.Contains(string(out), "env: GPUKIT_SSH_PASSWORD") {
		t.Errorf("no environment references in:\n%s", out)
	}
}

// TestGroupVarsToVersionsAndNetwork covers the cluster-wide variables.
func TestGroupVarsToVersionsAndNetwork(t *testing.T) {
	t.Parallel()
	const hosts = "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[kube_node]\nw ansible_host=10.0.1.1\n[k8s_cluster:children]\nkube_control_plane\nkube_node\n"
	tests := []struct {
		name     string
		vars     string // group_vars/k8s_cluster.yml
		versions inventory.Versions
		network  inventory.Network
		notes    []string
	}{
		{
			name:     "kubespray keys",
			vars:     "kube_version: v1.34.2\ncontainer_manager: containerd\ncontainerd_version: 2.1.4\nkube_pods_subnet: 10.233.64.0/18\nkube_service_addresses: 10.233.0.0/18\nkube_network_plugin: calico\n",
			versions: inventory.Versions{Kubernetes: "1.34.2", Runtime: "containerd", ContainerRuntime: "2.1.4"},
			network:  inventory.Network{PodCIDR: "10.233.64.0/18", ServiceCIDR: "10.233.0.0/18", CNI: "calico"},
			notes:    []string{"k8s_cluster.yml:1: variable kube_version: \"v1.34.2\" converted to spec.versions.kubernetes: 1.34.2"},
		},
		{
			name:     "cloud native stack keys",
			vars:     "k8s_version: \"1.34.6\"\ncontainer_runtime: containerd\nnvidia_container_toolkit_version: \"1.18.0\"\ngpu_driver_version: \"580.95.05\"\n",
			versions: inventory.Versions{Kubernetes: "1.34.6", Runtime: "containerd", ContainerToolkit: "1.18.0", NvidiaDriver: "580.95.05"},
		},
		{
			name:     "deepops cuda and a driver package version",
			vars:     "cuda_version: cuda-toolkit-12-8\nnvidia_driver_package_version: 570.124.06-1\n",
			versions: inventory.Versions{CUDA: "12.8", NvidiaDriver: "570.124.06"},
			notes: []string{
				"variable cuda_version: \"cuda-toolkit-12-8\" converted to spec.versions.cuda: 12.8",
				"variable nvidia_driver_package_version: \"570.124.06-1\" converted to spec.versions.nvidiaDriver: 570.124.06",
			},
		},
		{
			name:     "driver branch",
			vars:     "nvidia_driver_branch: \"580\"\n",
			versions: inventory.Versions{NvidiaDriver: "580"},
		},
		{
			name: "values gpukit rejects fall back to its defaults",
			vars: "kube_version: 1.29.5\nnvidia_driver_branch: \"535\"\ncontainerd_version: \"1.7\"\n",
			notes: []string{
				"variable kube_version: \"1.29.5\" is not accepted by gpukit (unsupported Kubernetes version 1.29.5; gpukit supports 1.34 to 1.37); spec.versions.kubernetes is left at gpukit's default",
				"variable nvidia_driver_branch: \"535\" is not accepted by gpukit (CUDA 13.0 (default) needs NVIDIA driver branch 580 or newer",
				"variable containerd_version: \"1.7\" is not accepted by gpukit (malformed version",
			},
		},
		{
			name: "a CUDA and driver that do not fit together both fall back",
			vars: "cuda_version: \"12.8\"\nnvidia_driver_branch: \"535\"\n",
			notes: []string{
				"variable cuda_version: \"12.8\" is not accepted by gpukit (CUDA 12.8 needs NVIDIA driver branch 570 or newer, but nvidiaDriver is 535)",
				"variable nvidia_driver_branch: \"535\" is not accepted by gpukit",
			},
		},
		{
			name:  "unsupported runtimes and plugins",
			vars:  "container_manager: crio\nkube_network_plugin: kube-ovn\n",
			notes: []string{"container runtime \"crio\" is not supported by gpukit", "network plugin \"kube-ovn\" is not one gpukit installs"},
		},
		{
			name:  "docker as a Kubernetes runtime",
			vars:  "container_manager: docker\n",
			notes: []string{"docker is not converted: Kubernetes has no Docker runtime since 1.24"},
		},
		{
			name:  "bad CIDR",
			vars:  "kube_pods_subnet: 10.233.64.0\n",
			notes: []string{"variable kube_pods_subnet: \"10.233.64.0\" is not a CIDR"},
		},
		{
			name:  "unknown variables are listed once per file",
			vars:  "dashboard_enabled: true\nk8s_gpu_mig_strategy: mixed\nhelm_enabled: true\nkubeconfig_localhost: true\n",
			notes: []string{"k8s_cluster.yml:1: group k8s_cluster: 1 variable(s) with no gpukit equivalent, not converted: dashboard_enabled", "variable k8s_gpu_mig_strategy: not converted: MIG layouts are written as spec.nvidia.mig", "variables helm_enabled, kubeconfig_localhost: not converted"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := mustConvert(t, Input{Data: []byte(hosts), ClusterName: "c",
				GroupVars: []VarsFile{{Name: "k8s_cluster.yml", Data: []byte(tt.vars)}}})
			if res.Cluster.Spec.Versions != tt.versions {
				t.Errorf("versions = %+v, want %+v", res.Cluster.Spec.Versions, tt.versions)
			}
			if res.Cluster.Spec.Network != tt.network {
				t.Errorf("network = %+v, want %+v", res.Cluster.Spec.Network, tt.network)
			}
			requireNotes(t, res, tt.notes...)
			mustLoad(t, Render(res))
		})
	}
}

// TestVariablePrecedence follows Ansible: all < parent group < child group <
// group_vars file over inventory vars of the same group < host.
func TestVariablePrecedence(t *testing.T) {
	t.Parallel()
	ini := "[kube_control_plane]\ncp ansible_host=10.0.0.1\n[kube_node]\nw1 ansible_host=10.0.1.1\nw2 ansible_host=10.0.1.2 ansible_user=hostuser\n" +
		"[k8s_cluster:children]\nkube_control_plane\nkube_node\n" +
		"[all:vars]\nansible_user=alluser\nansible_port=2201\n" +
		"[k8s_cluster:vars]\nansible_user=clusteruser\n" +
		"[kube_node:vars]\nansible_user=nodeuser\nansible_port=2202\n"
	res := mustConvert(t, Input{Data: []byte(ini), ClusterName: "c",
		GroupVars: []VarsFile{{Name: "group_vars/kube_node.yml", Data: []byte("ansible_port: 2203\n")}},
		HostVars:  []VarsFile{{Name: "host_vars/cp.yml", Data: []byte("ansible_port: 2204\n")}}})
	type hs struct {
		user string
		port int
	}
	var got []hs
	for _, h := range res.Cluster.Spec.Hosts {
		s := res.Cluster.Spec.SSH
		if h.SSH != nil {
			s.User = firstNonEmpty(h.SSH.User, s.User)
			if h.SSH.Port != 0 {
				s.Port = h.SSH.Port
			}
		}
		got = append(got, hs{s.User, s.Port})
	}
	want := []hs{{"clusteruser", 2204}, {"nodeuser", 2203}, {"hostuser", 2203}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("host %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestVarsForUnknownTargets notes group_vars and host_vars that match nothing.
func TestVarsForUnknownTargets(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Data: []byte("[kube_control_plane]\ncp ansible_host=10.0.0.1\n"), ClusterName: "c",
		GroupVars: []VarsFile{{Name: "group_vars/gpu_nodes.yml", Data: []byte("a: 1\n")}},
		HostVars:  []VarsFile{{Target: "ghost", Name: "hv.yml", Data: []byte("a: 1\n")}}})
	requireNotes(t, res, "group_vars/gpu_nodes.yml: group gpu_nodes: the inventory has no such group", "hv.yml: host ghost: the inventory has no such host")
}

// TestBastionGroup converts Kubespray's [bastion] group.
func TestBastionGroup(t *testing.T) {
	t.Parallel()
	ini := "[bastion]\nbastion ansible_host=203.0.113.7 ansible_user=jump\n[kube_control_plane]\ncp ansible_host=10.0.0.1\n[kube_node]\nw ansible_host=10.0.1.1\n"
	res := mustConvert(t, Input{Data: []byte(ini), ClusterName: "c"})
	if got, want := hostLines(res.Cluster), []string{"cp 10.0.0.1 control-plane", "w 10.0.1.1 worker"}; !equalStrings(got, want) {
		t.Errorf("hosts = %q", got)
	}
	if b := res.Cluster.Spec.SSH.Bastion; b == nil || *b != (inventory.Bastion{Address: "203.0.113.7", User: "jump"}) {
		t.Errorf("bastion = %+v", b)
	}
	requireNotes(t, res, "host bastion: is the bastion (Kubespray [bastion] group): converted to ssh.bastion")
	mustLoad(t, Render(res))
}

// TestClusterName defaults metadata.name with a note.
func TestClusterName(t *testing.T) {
	t.Parallel()
	res := mustConvert(t, Input{Data: []byte("[kube_control_plane]\ncp ansible_host=10.0.0.1\n")})
	if res.Cluster.Metadata.Name != DefaultClusterName {
		t.Errorf("name = %q", res.Cluster.Metadata.Name)
	}
	requireNotes(t, res, "metadata.name: Ansible inventories have no cluster name")
	res = mustConvert(t, Input{Data: []byte("[kube_control_plane]\ncp ansible_host=10.0.0.1\n"), ClusterName: "dgx-pod"})
	forbidNotes(t, res, "metadata.name")
}
