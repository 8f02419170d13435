package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1" // the kubernetes service, first of serviceCIDR
)

var start = time.Now()

func logf(format string, a ...any) {
	fmt.Printf("[kube-env %6.2fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, a...)...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// child is one component of the control plane, its own process.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// spawn starts bin with args, its output in dir/name.log. The child dies
// with kube-env (Pdeathsig), whatever kills kube-env.
func spawn(dir, name, bin string, args ...string) (*child, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(c.done) }()
	if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *child) stop(grace time.Duration) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func up(args []string) error {
	fs := flag.NewFlagSet("kube-env up", flag.ContinueOnError)
	dir := fs.String("dir", "", "work directory (kubeconfig, certificates, etcd data, logs)")
	bin := fs.String("bin", "", "directory of kube-apiserver, kube-controller-manager, kube-scheduler, kwok and kwok-stages.yaml")
	webhooks := fs.Bool("webhooks", false, "keep the admission webhooks on (off by default: no webhook server runs behind kwok)")
	owner := fs.Int("owner-pid", 0, "shut down when this process is gone (the test that started the control plane)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long the control plane may take to become ready")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *bin == "" {
		return errors.New("-dir and -bin are required")
	}
	pkiDir := filepath.Join(*dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "kube-env.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}

	// etcd, embedded: ready in well under a second.
	cu, err := loopbackURL()
	if err != nil {
		return err
	}
	pu, err := loopbackURL()
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kube-env"
	cfg.Dir = filepath.Join(*dir, "etcd")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true // test data: speed over durability
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{filepath.Join(*dir, "etcd.log")}
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(time.Minute):
		return errors.New("etcd not ready after 1m")
	}
	logf("etcd ready at %s", cu)

	ca, err := newPKI(pkiDir)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		name    string
		subject pkix.Name
		server  bool
	}{
		{"apiserver", pkix.Name{CommonName: "kube-apiserver"}, true},
		{"admin", pkix.Name{CommonName: "gpukit-test-admin", Organization: []string{"system:masters"}}, false},
	} {
		if err := ca.issue(c.name, c.subject, c.server); err != nil {
			return err
		}
	}
	if err := ca.serviceAccountKeys(); err != nil {
		return err
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	kubeconfig := filepath.Join(*dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, pkiDir); err != nil {
		return err
	}
	p := func(name string) string { return filepath.Join(pkiDir, name) }
	apiArgs := []string{
		"--etcd-servers=" + cu.String(),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(*dir, "certs"),
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		// No kubelet answers for the endpoints of the kubernetes service.
		"--endpoint-reconciler-type=none",
	}
	if !*webhooks {
		apiArgs = append(apiArgs, "--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook")
	}
	var children []*child
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			children[i].stop(10 * time.Second)
		}
	}()
	api, err := spawn(*dir, "kube-apiserver", filepath.Join(*bin, "kube-apiserver"), apiArgs...)
	if err != nil {
		return err
	}
	children = append(children, api)
	if err := waitReady(server, pkiDir, api, *timeout); err != nil {
		return err
	}
	logf("kube-apiserver ready at %s", server)

	common := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false"}
	kcm, err := spawn(*dir, "kube-controller-manager", filepath.Join(*bin, "kube-controller-manager"), append(common,
		"--service-account-private-key-file="+p("sa.key"), "--root-ca-file="+p("ca.crt"),
		"--use-service-account-credentials=true",
		// nodeipam would hand kwok's nodes pod CIDRs nothing routes (the cloud
		// controllers left kube-controller-manager in 1.37)
		"--controllers=*,-nodeipam",
		"--cluster-signing-cert-file="+p("ca.crt"), "--cluster-signing-key-file="+p("ca.key"))...)
	if err != nil {
		return err
	}
	children = append(children, kcm)
	sched, err := spawn(*dir, "kube-scheduler", filepath.Join(*bin, "kube-scheduler"), common...)
	if err != nil {
		return err
	}
	children = append(children, sched)
	kwok, err := spawn(*dir, "kwok", filepath.Join(*bin, "kwok"), "--kubeconfig="+kubeconfig,
		"--config="+filepath.Join(*bin, "kwok-stages.yaml"),
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+kwokAnnotation+"=fake",
		"--node-ip=127.0.0.1", "--node-port=0", "--server-address=127.0.0.1:0",
		// Without leases (0 unless a kwok configuration sets it) the nodes'
		// heartbeat is the status update of the heartbeat-with-lease stage,
		// minutes apart: the node lifecycle controller marks every node
		// NotReady after its grace period, sets every pod's Ready condition
		// False, and kwok never sets it back - Deployments stay unavailable.
		"--node-lease-duration-seconds=40")
	if err != nil {
		return err
	}
	children = append(children, kwok)

	// Pods can be created once the controller manager made the default
	// service account.
	if err := waitServiceAccount(kubeconfig, children, *timeout); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "ready"), []byte(kubeconfig+"\n"), 0o644); err != nil {
		return err
	}
	logf("control plane ready")
	fmt.Printf("KUBECONFIG=%s\n", kubeconfig)

	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case s := <-sig:
			logf("%s: shutting down", s)
			return nil
		case <-tick.C:
			if *owner > 0 && syscall.Kill(*owner, 0) == syscall.ESRCH {
				logf("owner %d is gone: shutting down", *owner)
				return nil
			}
			for _, c := range children {
				if c.exited() {
					return fmt.Errorf("%s exited (log: %s)", c.name, filepath.Join(*dir, c.name+".log"))
				}
			}
		}
	}
}

func loopbackURL() (*url.URL, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
}

func writeKubeconfig(path, server, pkiDir string) error {
	data := map[string]string{}
	for _, f := range []string{"ca.crt", "admin.crt", "admin.key"} {
		b, err := os.ReadFile(filepath.Join(pkiDir, f))
		if err != nil {
			return err
		}
		data[f] = base64.StdEncoding.EncodeToString(b)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gpukit-test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: gpukit-test-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: gpukit-test
  context: {cluster: gpukit-test, user: gpukit-test-admin}
current-context: gpukit-test
`, server, data["ca.crt"], data["admin.crt"], data["admin.key"])
	return os.WriteFile(path, []byte(kc), 0o600)
}

// waitReady polls the apiserver's /readyz with the admin certificate.
func waitReady(server, pkiDir string, api *child, timeout time.Duration) error {
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	deadline := time.Now().Add(timeout)
	for {
		if api.exited() {
			return errors.New("kube-apiserver exited early (see kube-apiserver.log)")
		}
		if resp, err := hc.Get(server + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitServiceAccount(kubeconfig string, children []*child, timeout time.Duration) error {
	cs, err := clientset(kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		for _, c := range children {
			if c.exited() {
				return fmt.Errorf("%s exited (see %s.log)", c.name, c.name)
			}
		}
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("no default service account: kube-controller-manager did not come up")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func clientset(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
