package kubeadm

import (
	"slices"
	"testing"
)

// The registry logins containerd's files may hold, whoever wrote them, are
// found for the redactor; the rest of the files stays readable.
func TestStateCredentials(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"gpukit's own hosts.toml: none", "server = \"https://registry-1.docker.io\"\n\n[host.\"http://10.9.9.9:5000/v2/mirror/docker.io\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n", nil},
		{"a header table", "server = \"https://reg.example.com\"\n[host.\"https://reg.example.com\".header]\n  authorization = \"Basic dXNlcjpzM2NyZXQ=\"\n  x-extra = [\"k3y-v4lue\"]\n", []string{"Basic dXNlcjpzM2NyZXQ=", "k3y-v4lue"}},
		{"the CRI plugin's auth", "version = 3\n[plugins.'io.containerd.cri.v1.images'.registry.configs.'reg.example.com'.auth]\n  username = \"robot\"\n  password = \"pa55-word\"\n  auth = \"cm9ib3Q6cGE1NS13b3Jk\"\n  identitytoken = \"id-t0ken\"\n", []string{"robot", "pa55-word", "cm9ib3Q6cGE1NS13b3Jk", "id-t0ken"}},
		{"not TOML: every long quoted string", "password = \"unterminated-secret\nauth = 'another-secret' [", []string{"another-secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &State{Files: map[string][]byte{"/etc/containerd/certs.d/reg/hosts.toml": []byte(tt.file)}}
			got := s.Credentials()
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("Credentials() = %q, want %q", got, want)
			}
			files := s.CredentialFiles()
			if want := len(tt.want) > 0; want != (len(files) == 1) {
				t.Errorf("CredentialFiles() = %q, want the file only when it holds logins", files)
			}
		})
	}
}
