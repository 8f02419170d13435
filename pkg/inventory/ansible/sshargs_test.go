package ansible

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
)

func TestParseSSHArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		bastion  *inventory.Bastion
		noCheck  bool
		problems string // a fragment of the joined problems, "" for none
		check    func(t *testing.T, o sshOptions)
	}{
		{name: "deepops ProxyCommand", in: `-o ProxyCommand="ssh -W %h:%p -q ubuntu@10.0.0.1"`,
			bastion: &inventory.Bastion{Address: "10.0.0.1", User: "ubuntu"}},
		{name: "ProxyCommand with options on both sides", in: `-o 'ProxyCommand ssh -i ~/.ssh/jump -o StrictHostKeyChecking=no -W [%h]:%p jump.example.com -p 2200 -l ops'`,
			bastion: &inventory.Bastion{Address: "jump.example.com", User: "ops", Port: 2200, KeyFile: "~/.ssh/jump"}, noCheck: true},
		{name: "netcat ProxyCommand", in: `-o ProxyCommand='ssh -q admin@10.1.1.1 nc %h %p'`,
			bastion: &inventory.Bastion{Address: "10.1.1.1", User: "admin"}},
		{name: "ProxyJump", in: `-o ProxyJump=ops@[fd00::1]:2022`,
			bastion: &inventory.Bastion{Address: "fd00::1", User: "ops", Port: 2022}},
		{name: "-J attached", in: `-Jjump`, bastion: &inventory.Bastion{Address: "jump"}},
		{name: "ssh:// destination", in: `-J ssh://u@j:23`, bastion: &inventory.Bastion{Address: "j", User: "u", Port: 23}},
		{name: "no host key checking", in: `-o StrictHostKeyChecking=no`, noCheck: true},
		{name: "known hosts to /dev/null", in: `-o UserKnownHostsFile=/dev/null`, noCheck: true},
		{name: "accept-new", in: `-o StrictHostKeyChecking=accept-new`, check: func(t *testing.T, o sshOptions) {
			if !o.acceptNew {
				t.Error("acceptNew not set")
			}
		}},
		{name: "user, port, key, timeout", in: `-l admin -p 2222 -i ~/.ssh/k -o ConnectTimeout=15 -o ControlMaster=auto -o ControlPersist=60s -C`, check: func(t *testing.T, o sshOptions) {
			if o.user != "admin" || o.port != 2222 || o.keyFile != "~/.ssh/k" || o.connectTimeout != "15s" {
				t.Errorf("options = %+v", o)
			}
			if !equalStrings(o.ignored, []string{"ControlMaster", "ControlPersist", "-C"}) {
				t.Errorf("ignored = %q", o.ignored)
			}
		}},
		{name: "chained jumps", in: `-J a,b`, problems: "chains several jump hosts"},
		{name: "ProxyCommand without forwarding", in: `-o ProxyCommand="ssh jump"`, problems: "does not forward to %h:%p"},
		{name: "ProxyCommand through another jump", in: `-o ProxyCommand="ssh -J x -W %h:%p y"`, problems: "chains another jump host"},
		{name: "not ssh", in: `-o ProxyCommand="connect-proxy -H proxy:3128 %h %p"`, problems: `ProxyCommand "connect-proxy ..." is not an ssh command`},
		{name: "ssh config file", in: `-F ./ssh.cfg`, problems: "an ssh_config file is not read by gpukit"},
		{name: "stray word", in: `oops`, problems: `argument "oops" is not understood`},
		{name: "bad port", in: `-p 0`, problems: `port "0" is not a number between 1 and 65535`},
		{name: "bad quoting", in: `-o "x`, problems: "cannot split into words"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := parseSSHArgs(tt.in)
			if !reflect.DeepEqual(o.bastion, tt.bastion) {
				t.Errorf("bastion = %+v, want %+v", o.bastion, tt.bastion)
			}
			if o.noHostKeyCheck != tt.noCheck {
				t.Errorf("noHostKeyCheck = %v", o.noHostKeyCheck)
			}
			joined := strings.Join(o.problems, "\n")
			if (tt.problems == "") != (joined == "") || !strings.Contains(joined, tt.problems) {
				t.Errorf("problems = %q, want one containing %q", joined, tt.problems)
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}
