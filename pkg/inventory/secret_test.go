package inventory

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestSecretResolve(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PW": "s3cret", "EMPTY": "", "HOME": "/home/op"}
	files := map[string]string{
		"/run/pw":              "from-file\n",
		"/run/crlf":            "win\r\n",
		"/run/two":             "keep\n\n",
		"/home/op/.gpukit/pw":  "home",
		"/run/empty":           "\n",
		"/home/op/.ssh/id":     "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
		"/home/op/.ssh/id.pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n",
		"/home/op/key.ppk":     "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
	}
	lookupEnv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	readFile := func(p string) ([]byte, error) {
		if v, ok := files[p]; ok {
			return []byte(v), nil
		}
		return nil, fs.ErrNotExist
	}
	tests := []struct {
		name string
		ref  *SecretRef
		want string
		err  string
	}{
		{"env", &SecretRef{Env: "PW"}, "s3cret", ""},
		{"env unset", &SecretRef{Env: "NOPE"}, "", "NOPE: not set"},
		{"env empty", &SecretRef{Env: "EMPTY"}, "", "EMPTY: empty"},
		{"file trims one newline", &SecretRef{File: "/run/pw"}, "from-file", ""},
		{"file trims crlf", &SecretRef{File: "/run/crlf"}, "win", ""},
		{"file keeps second newline", &SecretRef{File: "/run/two"}, "keep\n", ""},
		{"file under home", &SecretRef{File: "~/.gpukit/pw"}, "home", ""},
		{"file missing", &SecretRef{File: "/run/none"}, "", "secret file /run/none"},
		{"file empty", &SecretRef{File: "/run/empty"}, "", "empty"},
		{"value", &SecretRef{Value: "inline"}, "inline", ""},
		{"none", &SecretRef{}, "", "exactly one"},
		{"two", &SecretRef{Env: "PW", Value: "x"}, "", "exactly one"},
		{"nil", nil, "", "no secret"},
		// A secret file that is a private key would be sent to every host.
		{"openssh private key", &SecretRef{File: "~/.ssh/id"}, "", "secret file ~/.ssh/id holds a private key"},
		{"pem private key", &SecretRef{File: "/home/op/.ssh/id.pem"}, "", "holds a private key"},
		{"putty key", &SecretRef{File: "/home/op/key.ppk"}, "", "set ssh.keyFile to it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.ref.Resolve(lookupEnv, readFile)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Resolve() error = %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Error("error leaks the secret")
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	_, err := (&SecretRef{File: "/run/none"}).Resolve(lookupEnv, readFile)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file error %v does not wrap fs.ErrNotExist", err)
	}
}

// TestLoadDoesNotResolveSecrets: loading never reads the environment or files
// named by secrets, so `plan` works without them.
func TestLoadDoesNotResolveSecrets(t *testing.T) {
	t.Parallel()
	inv := mustParse(t, strings.Replace(minimal(""), "spec:\n", "spec:\n  ssh: {user: ops, password: {env: GPUKIT_TEST_SURELY_UNSET}, sudo: {password: {file: /nonexistent/pw}}}\n", 1))
	if inv.Machines[0].Access.Password.Env != "GPUKIT_TEST_SURELY_UNSET" {
		t.Error("password reference lost")
	}
}
