package inventory

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// evictionSignals are the kubelet's hard eviction signals.
var evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
	"imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree", "pid.available"}

// evictionThreshold is a percentage or a Kubernetes quantity.
var evictionThreshold = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?%|[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?)$`)

// etcdSchedule is a systemd calendar event's characters (systemd.time(7));
// each control plane's systemd-analyze decides whether it is one.
var etcdSchedule = regexp.MustCompile(`^[A-Za-z0-9*][A-Za-z0-9 *:/,.~+-]*$`)

// checkKubernetes checks spec.kubernetes: every value reaches kubeadm's
// configuration or containerd's, so each is held to what they accept.
func (c *checker) checkKubernetes(cl *Cluster, ms []Machine) {
	k := &cl.Spec.Kubernetes
	const p = "spec.kubernetes"
	if cl.Spec.Orchestrator == Swarm {
		if c.isSet(p) {
			c.warnf(p, "kubernetes settings are ignored: the orchestrator is swarm")
		}
		return
	}
	if k.ControlPlaneEndpoint != "" {
		if err := checkEndpoint(k.ControlPlaneEndpoint); err != nil {
			c.errorf(p+".controlPlaneEndpoint", "invalid endpoint: %v", err)
		}
	} else {
		cps := 0
		for _, m := range ms {
			if m.HasRole(RoleControlPlane) {
				cps++
			}
		}
		if cps > 1 {
			// Not an error: imported inventories rarely name one, and the
			// cluster works; it only loses its API with the first host.
			c.warnf("spec.hosts", "%d control-plane hosts but no spec.kubernetes.controlPlaneEndpoint: nodes and clients reach the API at the first one's address and lose it when that host is down; give the address of a load balancer in front of them (port 6443)", cps)
		}
	}
	c.checkGPUSharing(cl, ms)
	for i, san := range k.CertSANs {
		if err := checkAddress(san); err != nil {
			c.errorf(fmt.Sprintf("%s.certSANs[%d]", p, i), "invalid certificate name: %v", err)
		}
	}
	if k.ImageRepository != "" {
		if err := checkRegistry(k.ImageRepository); err != nil {
			c.errorf(p+".imageRepository", "invalid image repository: %v", err)
		}
	}
	for i, check := range k.IgnorePreflightErrors {
		if !isPreflightCheck(check) {
			c.errorf(fmt.Sprintf("%s.ignorePreflightErrors[%d]", p, i), "invalid preflight check %s; expected a kubeadm check name such as SystemVerification or Port-6443, or all", q(check))
		}
	}
	switch d := k.Kubelet.CgroupDriver; d {
	case "", "systemd", "cgroupfs":
	default:
		c.errorf(p+".kubelet.cgroupDriver", "unknown cgroup driver %s; expected systemd or cgroupfs", q(d))
	}
	if r := k.Kubelet.ResolvConf; r != "" {
		if err := badChar(r, charsPath); err != nil {
			c.errorf(p+".kubelet.resolvConf", "invalid path: %v", err)
		} else if !strings.HasPrefix(r, "/") {
			c.errorf(p+".kubelet.resolvConf", "resolvConf %s must be an absolute path on the hosts", q(r))
		}
	}
	for _, signal := range sortedKeys(k.Kubelet.EvictionHard) {
		path := joinKey(p+".kubelet.evictionHard", signal)
		v := k.Kubelet.EvictionHard[signal]
		switch {
		case !slices.Contains(evictionSignals, signal):
			c.errorAtKey(path, "unknown eviction signal %s; expected %s", q(signal), joinWords(evictionSignals, "or"))
		case !evictionThreshold.MatchString(v):
			c.errorf(path, "invalid threshold %s; expected a percentage such as 5%% or a quantity such as 500Mi", q(v))
		case strings.HasSuffix(v, "%"):
			if f, _ := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64); f > 100 {
				c.errorf(path, "threshold %s is over 100%%", q(v))
			}
		}
	}
	if b := k.EtcdBackup; b != nil {
		if b.Schedule != "" && !etcdSchedule.MatchString(b.Schedule) {
			c.errorf(p+".etcdBackup.schedule", "invalid schedule %s; expected a systemd calendar event such as daily, hourly or \"*-*-* 02:00:00\"", q(b.Schedule))
		}
		if b.Keep < 0 || b.Keep > 1000 {
			c.errorf(p+".etcdBackup.keep", "keep %d is out of range; expected 1 to 1000 snapshots", b.Keep)
		}
	}
	switch m := k.KubeProxy.Mode; m {
	case "", "iptables", "ipvs", "nftables":
	default:
		c.errorf(p+".kubeProxy.mode", "unknown kube-proxy mode %s; expected iptables, ipvs or nftables", q(m))
	}
	switch s := k.Containerd.Source; s {
	case "", ContainerdFromDocker, ContainerdFromDistribution:
	default:
		c.errorf(p+".containerd.source", "unknown containerd source %s; expected %s or %s", q(s), ContainerdFromDocker, ContainerdFromDistribution)
	}
	switch r := k.Containerd.NVIDIARuntime; r {
	case "", NVIDIARuntimeDefault, NVIDIARuntimeClass:
	default:
		c.errorf(p+".containerd.nvidiaRuntime", "unknown NVIDIA runtime mode %s; expected %s or %s", q(r), NVIDIARuntimeDefault, NVIDIARuntimeClass)
	}
	switch d := k.DevicePlugin; d {
	case "", DevicePluginNVIDIA, DevicePluginNone:
	default:
		c.errorf(p+".devicePlugin", "unknown device plugin %s; expected %s or %s", q(d), DevicePluginNVIDIA, DevicePluginNone)
	}
	if n := k.KubeProxy.ConntrackMaxPerCore; n != nil && (*n < 0 || *n > 1<<20) {
		c.errorf(p+".kubeProxy.conntrackMaxPerCore", "conntrackMaxPerCore is %d; expected 0 (leave the host's limit alone) to 1048576", *n)
	}
}

// checkEndpoint accepts host[:port] ([IPv6]:port): the API's address.
func checkEndpoint(s string) error {
	host, port := s, ""
	if h, pt, err := net.SplitHostPort(s); err == nil {
		host, port = h, pt
	} else if strings.Count(s, ":") == 1 || strings.HasPrefix(s, "[") {
		return fmt.Errorf("%s: expected host[:port], e.g. k8s-api.example.com:6443", q(s))
	}
	if err := checkAddress(host); err != nil {
		return err
	}
	if port != "" && !validPortText(port) {
		return fmt.Errorf("%s: port %s is out of range 1-65535", q(s), q(port))
	}
	return nil
}

// isPreflightCheck reports whether s looks like a kubeadm preflight check
// name (FileContent--proc-sys-net-ipv4-ip_forward, Port-6443, all).
func isPreflightCheck(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && (r == '-' || r == '.' || r == '_')
		if !ok {
			return false
		}
	}
	return true
}
