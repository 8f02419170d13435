package kubeadm

import (
	"strings"
	"testing"
)

// kube-join-token.sh's output: the key kubeadm made (control planes), then
// the join command; anything else is refused, not half-read.
func TestParseJoinCommand(t *testing.T) {
	const (
		key  = "5610b6f73593049acddee6b59994360aa4441be0c0d9277c76705d129ba18d65"
		join = "kubeadm join 10.0.0.1:6443 --token jasg79.fdh4p279l320cz1g --discovery-token-ca-cert-hash sha256:f62bf97d4fba6876e4c3ff645df3fca969c06169dee3865aab9d0bca8ec9f8cd \n"
	)
	tests := []struct {
		name, out string
		withKey   bool
		wantKey   string
		wantErr   string
	}{
		{"worker", join, false, "", ""},
		{"control plane", "certificate-key=" + key + "\n" + join, true, key, ""},
		{"a key nobody asked for is dropped", "certificate-key=" + key + "\n" + join, false, "", ""},
		{"no key", join, true, "", "printed no certificate key"},
		{"not a key: upload-certs printed something else last", "certificate-key=[upload-certs] Using certificate key:\n" + join, true, "", "printed no certificate key"},
		{"no join command", "certificate-key=" + key + "\n", true, "", "no join command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := parseJoinCommand(tt.out, tt.withKey)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || j.Token != "jasg79.fdh4p279l320cz1g" || len(j.CACertHashes) != 1 || j.CertificateKey != tt.wantKey {
				t.Fatalf("%+v, %v", j, err)
			}
		})
	}
}
