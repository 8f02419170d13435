package e2e

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gpukit/gpukit/test/lab"
)

// sampler records every command line the lab hosts' processes have while a
// run goes on (each host polls /proc every 50 ms, printing each command line
// once), so that a secret passed as an argument is seen, however short the
// process's life.
type sampler struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	out    bytes.Buffer
}

const sampleCmdlines = `import os, sys, time
seen = set()
while True:
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                c = open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").strip()
            except OSError:
                continue
            if c and c not in seen:
                seen.add(c)
                sys.stdout.buffer.write(c + b"\n")
                sys.stdout.flush()
    time.sleep(0.05)
`

func sampleHosts(t *testing.T, l *lab.Lab, hosts ...string) *sampler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{cancel: cancel}
	for _, h := range hosts {
		cmd := l.SSHCommand(h, "exec python3 -c '"+sampleCmdlines+"'")
		var buf bytes.Buffer
		cmd.Stdout = &buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s.wg.Go(func() {
			go func() { <-ctx.Done(); _ = cmd.Process.Kill() }()
			_ = cmd.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			s.out.WriteString(buf.String())
		})
	}
	return s
}

// stop ends the sampling and returns every command line seen.
func (s *sampler) stop() string {
	s.cancel()
	s.wg.Wait()
	return s.out.String()
}

// canaryPlaces are the texts a secret must never be in: a run's output
// (JSON: every event, from which the plain output is rendered), its log
// directory, the hosts' journals, and the command lines sampled during the
// run.
func canaryPlaces(t *testing.T, l *lab.Lab, r initResult, cmdlines string, hosts ...string) map[string]string {
	t.Helper()
	places := map[string]string{"output": r.out, "command lines": cmdlines}
	_ = filepath.WalkDir(r.logDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				places["log "+filepath.Base(p)] = string(b)
			}
		}
		return nil
	})
	for _, h := range hosts {
		places["journal of "+h] = l.SSH(t, h, "journalctl --no-pager -q -o cat")
	}
	return places
}

// hits counts where secret appears among places.
func hits(places map[string]string, secret string) []string {
	var out []string
	for name, text := range places {
		if secret != "" && strings.Contains(text, secret) {
			out = append(out, name)
		}
	}
	return out
}

// certificateKeys are the hex strings among places that decrypt the
// control-plane certificates kubeadm uploaded (kubeadm-certs, AES-GCM with
// the nonce first): a certificate key that leaked. The key itself is kept
// nowhere a test could read it, so every 64-hex-digit string is tried.
func certificateKeys(t *testing.T, kubectl func(...string) []byte, places map[string]string) []string {
	t.Helper()
	var secret struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(kubectl("-n", "kube-system", "get", "secret", "kubeadm-certs", "-o", "json"), &secret); err != nil {
		t.Fatal(err)
	}
	sealed, err := base64.StdEncoding.DecodeString(secret.Data["ca.crt"])
	if err != nil || len(sealed) == 0 {
		t.Fatalf("kubeadm-certs has no ca.crt: %v", err)
	}
	var out []string
	tried := map[string]bool{}
	for name, text := range places {
		for _, cand := range regexp.MustCompile(`\b[0-9a-f]{64}\b`).FindAllString(text, -1) {
			if tried[cand] {
				continue
			}
			tried[cand] = true
			key, _ := hex.DecodeString(cand)
			block, err := aes.NewCipher(key)
			if err != nil {
				continue
			}
			gcm, err := cipher.NewGCM(block)
			if err != nil || len(sealed) < gcm.NonceSize() {
				continue
			}
			if _, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], nil); err == nil {
				out = append(out, name)
			}
		}
	}
	t.Logf("certificate key canary: %d 64-hex-digit strings tried against kubeadm-certs", len(tried))
	return out
}

// kubectlAt runs kubectl with a kubeconfig.
func kubectlAt(t *testing.T, bin, kubeconfig string) func(...string) []byte {
	return func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...).Output()
		if err != nil {
			t.Fatalf("kubectl %v: %v", args, err)
		}
		return out
	}
}

// grafanaLoginCanary: the Grafana admin password init generated (the
// cluster's secret holds it base64-encoded, as secretData) is in the 0600
// file init names and nowhere else: not in the output, the logs, the
// hosts' journals or the command lines sampled during the run.
func grafanaLoginCanary(t *testing.T, l *lab.Lab, r initResult, cmdlines, secretData string) {
	t.Helper()
	pw, err := base64.StdEncoding.DecodeString(secretData)
	if err != nil || len(pw) < 16 {
		t.Fatalf("Grafana's admin secret: %q %v", secretData, err)
	}
	files, _ := filepath.Glob("*.credentials")
	if len(files) != 1 {
		t.Fatalf("init wrote credential files %v, want one", files)
	}
	fi, err := os.Stat(files[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600", files[0], fi.Mode(), err)
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), "Grafana\tuser admin\tpassword "+string(pw)+"\n") {
		t.Fatalf("%s does not hold the cluster's Grafana login", files[0])
	}
	if !strings.Contains(r.out, files[0]) {
		t.Errorf("the output does not name %s", files[0])
	}
	places := canaryPlaces(t, l, r, cmdlines, hostNames(l)...)
	if where := hits(places, string(pw)); len(where) > 0 {
		t.Errorf("Grafana's generated admin password is in: %v", where)
	}
	t.Logf("canary: Grafana's generated login, in %s only: searched in %d places (%d command lines sampled)", files[0], len(places), strings.Count(cmdlines, "\n"))
}
