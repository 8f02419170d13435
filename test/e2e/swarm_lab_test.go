package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/bootstrap/swarm"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/swarmapi"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/gpusim/migsim"
	"github.com/gpukit/gpukit/test/lab"
)

// The swarm of `gpukit init` on real Docker engines (Debian's docker.io
// through the lab's package proxy, dockerd and swarm running in systemd lab
// hosts) over simulated GPUs: 1 manager without GPU and 2 GPU workers form a
// swarm; each worker advertises its GPU; a service reserving NVIDIA-GPU=1
// runs only on the workers and each container sees its node's GPU (the
// simulator's nvidia-container-runtime applies Swarm's assignment through
// swarm-resource, as NVIDIA's does); a service asking for more GPUs than any
// node has stays pending; labels are on the nodes; the user's daemon.json
// settings survive; the join token shows nowhere; a second init changes
// nothing; add-node joins a 4th host touching only it and the manager;
// reset of one host, then of all, restores docker's configuration; init
// again forms the swarm again.
func TestLabSwarm(t *testing.T) {
	lab.Require(t)
	t.Parallel()
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	// Real GPUs have distinct UUIDs; the captures' are redacted to zeros.
	// Each worker replays a copy with its own, so that a container seeing
	// "a" GPU can be told from one seeing its node's.
	uuids := map[string]string{
		"lab-2": "GPU-5a1e0002-6c2d-4b1e-9f00-000000000002",
		"lab-3": "GPU-5a1e0003-6c2d-4b1e-9f00-000000000003",
		"lab-4": "GPU-5a1e0004-6c2d-4b1e-9f00-000000000004",
	}
	hw := map[string]gpusim.Hardware{}
	for host, uuid := range uuids {
		// lab-2's modules can be unloaded and loaded at run time (nothing
		// holds them once drained): its new driver needs no reboot.
		hw[host] = gpusim.Hardware{Capture: withUUID(t, h100, uuid), RuntimeModules: host == "lab-2"}
	}
	l := lab.Start(t, lab.Options{Hosts: 4})
	repo := gpusim.Simulate(t, l, hw)
	dir := t.TempDir()
	gpuInv, err := repo.Inventory(l, dir)
	if err != nil {
		t.Fatal(err)
	}
	inv4 := swarmInventory(t, gpuInv, filepath.Join(dir, "swarm-4.yaml"), "")
	inv3 := swarmInventory(t, gpuInv, filepath.Join(dir, "swarm-3.yaml"), "lab-4")
	all := []string{"lab-1", "lab-2", "lab-3", "lab-4"}
	var wg sync.WaitGroup
	for _, h := range all {
		l.SetRebootDelay(t, h, time.Second)
		wg.Add(1)
		go func() { defer wg.Done(); l.UseDebianMirror(t, h) }()
	}
	wg.Wait()
	// A user's own docker settings on lab-2, which must survive.
	userDaemon := `{"log-level": "warn", "node-generic-resources": ["SSD=fast"]}`
	l.SSH(t, "lab-2", "mkdir -p /etc/docker && echo '"+userDaemon+"' >/etc/docker/daemon.json")

	t.Run("plan changes nothing", func(t *testing.T) {
		r := runInit(t, "plan", "-i", inv3)
		if r.code != cli.ExitOK || len(r.writeSteps()) != 0 {
			t.Fatalf("plan: exit %d, writes %v\n%s", r.code, r.writeSteps(), r.out)
		}
		joins := 0
		for _, e := range r.events {
			if e.Type == event.Planned && e.Phase == swarm.PhaseJoinWorkers {
				joins++
				if !strings.Contains(e.Script, "<worker join token of lab-1>") {
					t.Errorf("planned join on %s:\n%s", e.Host, e.Script)
				}
			}
		}
		if joins != 2 {
			t.Errorf("%d joins planned, want 2", joins)
		}
		if got := l.SSH(t, "lab-1", "command -v docker || echo none"); got != "none" {
			t.Errorf("plan installed docker: %q", got)
		}
	})

	t.Run("init forms a GPU swarm", func(t *testing.T) {
		start := time.Now()
		r := runInit(t, "init", "-i", inv3)
		if r.code != cli.ExitOK || r.counts.Changed != 3 {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("first init (NVIDIA stack + docker + swarm) on 3 hosts: %s", time.Since(start).Round(100*time.Millisecond))
		nodes := swarmNodes(t, l)
		if len(nodes) != 3 {
			t.Fatalf("nodes: %+v", nodes)
		}
		for _, n := range nodes {
			wantRole := "worker"
			if n.Hostname == "lab-1" {
				wantRole = "manager"
			}
			if n.Role != wantRole || n.State != "ready" || n.Availability != "active" {
				t.Errorf("%s: role %s, state %s, availability %s", n.Hostname, n.Role, n.State, n.Availability)
			}
			want := uuids[n.Hostname]
			if (want == "" && len(n.GPUs) != 0) || (want != "" && (len(n.GPUs) != 1 || n.GPUs[0] != want)) {
				t.Errorf("%s advertises GPUs %v, want %q", n.Hostname, n.GPUs, want)
			}
			if want != "" && (n.Labels[swarmapi.LabelGPUProduct] != "NVIDIA H100 80GB HBM3" || n.Labels[swarmapi.LabelGPUCount] != "1" ||
				n.Labels[swarmapi.LabelDriver] != "580.95.05" || n.Labels[swarmapi.LabelCUDA] != "13.0" || n.Labels[swarmapi.LabelGPUMemory] == "") {
				t.Errorf("%s labels: %v", n.Hostname, n.Labels)
			}
		}
		lab2 := nodeNamed(nodes, "lab-2")
		if strings.Join(lab2.Resources, ",") != "SSD=fast" {
			t.Errorf("lab-2's own generic resource is gone: %v", lab2.Resources)
		}
		var daemon map[string]any
		if err := json.Unmarshal([]byte(l.SSH(t, "lab-2", "cat /etc/docker/daemon.json")), &daemon); err != nil || daemon["log-level"] != "warn" || daemon["default-runtime"] != "nvidia" {
			t.Errorf("lab-2 daemon.json: %v %v", daemon, err)
		}
		// The join tokens never show: not in the output, not in the logs.
		for _, role := range []string{"worker", "manager"} {
			token := l.SSH(t, "lab-1", "docker swarm join-token -q "+role)
			if !strings.HasPrefix(token, "SWMTKN-") {
				t.Fatalf("%s token: %q", role, token)
			}
			assertNowhere(t, token, r.out, r.logDir)
		}
	})

	t.Run("GPU services land on GPU nodes and see their GPU", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, h := range all[:3] {
			wg.Add(1)
			go func() { defer wg.Done(); l.SSH(t, h, busyboxImage) }()
		}
		wg.Wait()
		l.SSH(t, "lab-1", "docker service create -d --name gpu1 --replicas 2 --generic-resource NVIDIA-GPU=1 gpukit-lab/busybox:1 sh -c 'env; sleep 3600' >/dev/null 2>&1")
		l.SSH(t, "lab-1", "docker service create -d --name gpu2 --generic-resource NVIDIA-GPU=2 gpukit-lab/busybox:1 sleep 3600 >/dev/null 2>&1")
		var tasks string
		deadline := time.Now().Add(90 * time.Second)
		for {
			tasks = l.SSH(t, "lab-1", "docker service ps gpu1 --filter desired-state=running --format '{{.Node}} {{.CurrentState}}' | sort")
			if strings.Count(tasks, "Running") == 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		if !regexp.MustCompile(`^lab-2 Running.*\nlab-3 Running`).MatchString(tasks) {
			t.Fatalf("gpu1's tasks: %q (want one on each GPU worker, none on the manager)", tasks)
		}
		for _, h := range []string{"lab-2", "lab-3"} {
			// What the container's process got (docker exec would show the
			// container's configuration, not what the runtime made of it).
			env := l.SSH(t, h, "docker inspect --format '{{json .Config.Env}}' $(docker ps -q --filter name=gpu1); docker exec $(docker ps -q --filter name=gpu1) cat /proc/1/environ | tr '\\0' '\\n'")
			if !strings.Contains(env, "DOCKER_RESOURCE_NVIDIA-GPU="+uuids[h]) || !regexp.MustCompile(`(?m)^NVIDIA_VISIBLE_DEVICES=`+uuids[h]+`$`).MatchString(env) ||
				!strings.Contains(env, "GPUSIM_RUNTIME=") {
				t.Errorf("%s: the container does not see its node's GPU %s:\n%s", h, uuids[h], env)
			}
		}
		pending := l.SSH(t, "lab-1", "docker service ps gpu2 --no-trunc --format '{{.CurrentState}} {{.Error}}'")
		if !strings.HasPrefix(pending, "Pending") || !strings.Contains(pending, "insufficient resources") {
			t.Errorf("gpu2 (2 GPUs, no node has 2): %q", pending)
		}
		l.SSH(t, "lab-1", "docker service rm gpu1 gpu2 >/dev/null")
	})

	t.Run("a second init changes nothing", func(t *testing.T) {
		r := runInit(t, "init", "-i", inv3)
		if r.code != cli.ExitOK || r.counts.Changed != 0 || r.counts.Unchanged != 3 || len(r.writeSteps()) != 0 {
			t.Fatalf("exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}
	})

	t.Run("add-node joins lab-4, touching only it and the manager", func(t *testing.T) {
		before := sshLogins(t, l, all...)
		start := time.Now()
		r := runInit(t, "add-node", "-i", inv4, "lab-4")
		if r.code != cli.ExitOK || r.counts.Changed != 2 { // lab-4, and the manager that labels its node
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("add-node of 1 host (NVIDIA stack + docker + join): %s", time.Since(start).Round(100*time.Millisecond))
		after := sshLogins(t, l, all...)
		for _, h := range []string{"lab-2", "lab-3"} {
			if after[h] != before[h] {
				t.Errorf("%s was connected to (%d logins before, %d after)", h, before[h], after[h])
			}
		}
		if after["lab-1"] != before["lab-1"]+1 || after["lab-4"] < before["lab-4"]+1 {
			t.Errorf("logins before %v, after %v: want one on the manager, some on lab-4", before, after)
		}
		n := nodeNamed(swarmNodes(t, l), "lab-4")
		if n.State != "ready" || len(n.GPUs) != 1 || n.GPUs[0] != uuids["lab-4"] || n.Labels[swarmapi.LabelGPUCount] != "1" {
			t.Errorf("lab-4's node: %+v", n)
		}
		assertNowhere(t, l.SSH(t, "lab-1", "docker swarm join-token -q worker"), r.out, r.logDir)
	})

	t.Run("status lists the nodes", func(t *testing.T) {
		r := runInit(t, "status", "-i", inv4)
		var st flow.SwarmStatus
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		for _, line := range lines {
			if strings.Contains(line, `"type":"swarm-status"`) {
				if err := json.Unmarshal([]byte(line), &st); err != nil {
					t.Fatal(err)
				}
			}
		}
		if r.code != cli.ExitOK || len(st.Nodes) != 4 || len(nodeNamed(st.Nodes, "lab-4").GPUs) != 1 || !st.Healthy {
			t.Errorf("exit %d, nodes %+v\n%s", r.code, st.Nodes, r.out)
		}
		for _, g := range st.GPUs {
			if g.Status == facts.HealthFail || len(g.GPUs) == 0 || g.Driver == "" {
				t.Errorf("status's GPUs of %s: %+v", g.Host, g)
			}
		}
		if len(st.GPUs) == 0 {
			t.Errorf("status shows no host's GPUs\n%s", r.out)
		}
	})

	// lab-4 made a manager in the inventory: the next init promotes it.
	inv4m := filepath.Join(dir, "swarm-4-managers.yaml")
	t.Run("roles follow the inventory", func(t *testing.T) {
		b, err := os.ReadFile(inv4)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)(^    - name: lab-4\n(?:      .*\n)*?      roles: )\[worker\]`).ReplaceAllString(string(b), "${1}[manager]")
		if m == string(b) {
			t.Fatalf("no lab-4 worker entry in %s", inv4)
		}
		if err := os.WriteFile(inv4m, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runInit(t, "init", "-i", inv4m)
		if r.code != cli.ExitOK || r.counts.Changed != 1 {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		if n := nodeNamed(swarmNodes(t, l), "lab-4"); n.Role != "manager" || n.Manager != "reachable" {
			t.Errorf("lab-4 after init: role %s, manager %q", n.Role, n.Manager)
		}
	})

	t.Run("reset one host, then all; init again", func(t *testing.T) {
		r := runInit(t, "reset", "-i", inv4m, "--hosts", "lab-4")
		if r.code != cli.ExitUsage || !strings.Contains(r.out, "pass --yes") {
			t.Fatalf("reset without --yes and no terminal: exit %d\n%s", r.code, r.out)
		}
		// lab-4 is a manager: lab-1 demotes it first, and forgets it after.
		r = runInit(t, "reset", "-i", inv4m, "--hosts", "lab-4", "--yes")
		if r.code != cli.ExitOK || !slices.Contains(r.writeSteps()["lab-1"], "demote 1 manager(s)") {
			t.Fatalf("exit %d %v, writes %v\n%s", r.code, r.failed, r.writeSteps(), r.out)
		}
		if got := l.SSH(t, "lab-4", "docker info --format '{{.Swarm.LocalNodeState}}'; test -e /etc/docker/daemon.json && echo daemon.json left || true; grep -c '^swarm-resource' /etc/nvidia-container-runtime/config.toml || true"); got != "inactive\n0" {
			t.Errorf("lab-4 after reset: %q", got)
		}
		if n := nodeNamed(swarmNodes(t, l), "lab-4"); n.ID != "" {
			t.Errorf("lab-4 is still listed: %+v", n)
		}
		r = runInit(t, "reset", "-i", inv4, "--yes")
		if r.code != cli.ExitOK {
			t.Fatalf("exit %d %v\n%s", r.code, r.failed, r.out)
		}
		if got := l.SSH(t, "lab-2", "cat /etc/docker/daemon.json"); got != userDaemon {
			t.Errorf("lab-2's daemon.json after reset: %q, want the user's %q", got, userDaemon)
		}
		for _, h := range all {
			// Left, and the swarm's ports free for the next init's preflight.
			if got := l.SSH(t, h, "docker info --format '{{.Swarm.LocalNodeState}}'; ss -Hltn '( sport = :2377 or sport = :7946 )' | wc -l"); got != "inactive\n0" {
				t.Errorf("%s after reset: %q", h, got)
			}
		}
		r = runInit(t, "init", "-i", inv4)
		if r.code != cli.ExitOK || len(swarmNodes(t, l)) != 4 {
			t.Fatalf("init after reset: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
	})

	// The rolling driver upgrade on the real swarm: 580.95.05 -> 590.48.01
	// on the three GPU workers, one at a time. A serving service holds
	// lab-2's and lab-3's GPUs, a training job (a replicated-job with a
	// checkpoint label) lab-4's, a global service every node. lab-2 is
	// drained: its serving task has nowhere to go (every other GPU is
	// taken) and comes back to it once it is active again, as does the
	// global task. lab-3's GPU is lost on purpose: verification catches
	// it, lab-3 stays drained and marked, the rollout stops before lab-4.
	// Fixed, --resume finishes lab-3, then asks lab-4's training to
	// checkpoint and leaves lab-4 untouched (the same task runs, the node
	// never updated); the training done, the next --resume waits for it
	// and upgrades lab-4. Packages change version and are held; lab-2's
	// modules, which nothing holds once it is drained, are swapped without a
	// reboot, the other workers reboot (their modules change only at a
	// boot), the manager never does; the nodes' driver labels follow, and a
	// last run changes nothing.
	t.Run("upgrade driver rolls the swarm's GPU workers to 590.48.01, one at a time", func(t *testing.T) {
		workers := []string{"lab-2", "lab-3", "lab-4"}
		l.SSH(t, "lab-4", busyboxImage)
		l.SSH(t, "lab-1", `set -e
q() { docker service create -d --stop-grace-period 1s "$@" >/dev/null 2>&1; }
q --name serve --replicas 2 --generic-resource NVIDIA-GPU=1 --constraint node.hostname!=lab-4 gpukit-lab/busybox:1 sleep 3600
q --name train --mode replicated-job --label gpukit.dev/checkpoint=signal:SIGUSR1 --generic-resource NVIDIA-GPU=1 --constraint node.hostname==lab-4 \
  gpukit-lab/busybox:1 sh -c 'trap "echo checkpoint asked" USR1; while [ ! -e /done ]; do sleep 1; done'
q --name agent --mode global gpukit-lab/busybox:1 sleep 3600`)
		running := func(service string) string {
			return l.SSH(t, "lab-1", "docker service ps "+service+" --filter desired-state=running --format '{{.Node}} {{.CurrentState}}' | grep Running | sort | cut -d' ' -f1 | paste -sd,")
		}
		waitFor := func(what string, ok func() bool) {
			t.Helper()
			for deadline := time.Now().Add(90 * time.Second); !ok(); time.Sleep(time.Second) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: not after 90 s", what)
				}
			}
		}
		waitFor("serve on lab-2 and lab-3, agent everywhere", func() bool {
			return running("serve") == "lab-2,lab-3" && running("agent") == "lab-1,lab-2,lab-3,lab-4"
		})
		trainTask := func() string {
			return l.SSH(t, "lab-1", "docker service ps train --filter desired-state=complete --format '{{.ID}} {{.Node}} {{.CurrentState}}' | grep Running || true")
		}
		waitFor("train running on lab-4", func() bool { return strings.Contains(trainTask(), " lab-4 Running") })
		train := strings.Fields(trainTask())[0]
		nodeSpec := func(h string) string { return l.SSH(t, "lab-1", "docker node inspect "+h+" --format '{{json .Spec}}'") }
		lab4Spec := nodeSpec("lab-4")
		boots := bootIDs(t, l, all...)
		state := filepath.Join(t.TempDir(), "swarm.driver.json")
		args := []string{"upgrade", "driver", "-i", inv4, "--driver", "590.48.01", "--state", state}

		// The dry-run: the order, lab-4's training named, nothing changed.
		r := runInit(t, append(args, "--dry-run")...)
		planned := map[string]string{}
		for _, e := range r.events {
			if e.Type == event.Planned && strings.HasPrefix(e.Step, "drain ") {
				planned[e.Host] = e.Message
			}
		}
		if r.code != cli.ExitOK || !strings.Contains(planned["lab-2"], "--availability drain") || planned["lab-4"] != "" || !strings.Contains(r.out, `"order":["lab-2","lab-3","lab-4"]`) ||
			nodeSpec("lab-2") == "" || nodeNamed(swarmNodes(t, l), "lab-2").Availability != "active" {
			t.Fatalf("dry-run: exit %d, drains planned %v\n%s", r.code, planned, r.out)
		}
		if _, err := os.Stat(state); err == nil {
			t.Error("the dry-run wrote a rollout state")
		}

		l.SSH(t, "lab-3", "touch /etc/gpusim/gpu-lost")
		start := time.Now()
		r = runInit(t, args...)
		if r.code != cli.ExitHostsFailed || !strings.HasPrefix(r.failed["lab-3"], "nvidia/verify: not verified") || len(r.failed) != 1 {
			t.Fatalf("first run: exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		t.Logf("first run (lab-2 upgraded, lab-3 caught): %s; %s", time.Since(start).Round(100*time.Millisecond), upgradeReport(r.out))
		n3 := nodeNamed(swarmNodes(t, l), "lab-3")
		if n3.Availability != "drain" || n3.Labels["dev.gpukit.upgrade-cordoned"] == "" {
			t.Errorf("lab-3 after failing verification: %s, labels %v (want drained, marked)", n3.Availability, n3.Labels)
		}
		// lab-2's tasks came back: its serving task waited, pending, for a
		// GPU, and the global service runs on every active node.
		waitFor("serve back on lab-2", func() bool {
			return strings.Contains(running("serve"), "lab-2") && strings.Contains(running("agent"), "lab-2")
		})
		if got := l.SSH(t, "lab-4", "nvidia-smi --query-gpu=driver_version --format=csv,noheader"); got != "580.95.05" {
			t.Errorf("lab-4 runs %s: the rollout went on past a failed node", got)
		}
		if got := nodeSpec("lab-4"); got != lab4Spec {
			t.Errorf("lab-4's node was updated before its turn: %s -> %s", lab4Spec, got)
		}
		code, out, errOut := run(t, "status", "-i", inv4, "-o", "plain", "--log-dir", t.TempDir())
		if code != cli.ExitHostsFailed || !strings.Contains(errOut, "lab-3's GPUs fail their health check") || !regexp.MustCompile(`(?m)^lab-3\s+worker\s+ready\s+drain\s`).MatchString(out) {
			t.Errorf("status with lab-3's GPU lost: exit %d\n%s\n%s", code, out, errOut)
		}
		l.SSH(t, "lab-3", "rm /etc/gpusim/gpu-lost")
		lab2 := r.writeSteps()["lab-2"]
		if !slices.Contains(lab2, "swap the kernel modules for driver 590.48.01") || slices.Contains(lab2, "reboot") {
			t.Errorf("lab-2, whose modules nothing holds once drained, was not swapped: %v", lab2)
		}

		// Resumed: lab-3 first (gpukit's, out of service), then lab-4's
		// training is asked to checkpoint and the node left alone.
		r = runInit(t, append(args, "--resume")...)
		if r.code != cli.ExitHostsFailed || len(r.failed) != 0 || !strings.Contains(r.out, "lab-4: training still running (train.") {
			t.Fatalf("resume with training on lab-4: exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		if w := r.writeSteps()["lab-2"]; len(w) != 0 {
			t.Errorf("the resume changed lab-2 again: %v (first run: %v)", w, lab2)
		}
		if w := r.writeSteps()["lab-4"]; len(w) != 1 || !strings.HasPrefix(w[0], "checkpoint train.") {
			t.Errorf("lab-4's writes: %v, want only the checkpoint", w)
		}
		if got := strings.Fields(trainTask()); len(got) == 0 || got[0] != train {
			t.Errorf("the training task %s is gone: %v", train, got)
		}
		if got := nodeSpec("lab-4"); got != lab4Spec {
			t.Errorf("lab-4's node was updated while its training ran: %s -> %s", lab4Spec, got)
		}
		// The shell runs its trap once its current `sleep 1` ends: the line
		// comes up to a second after the signal.
		var trainLog string
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(trainLog, "checkpoint asked") && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			trainLog = l.SSH(t, "lab-4", "docker logs $(docker ps -q --filter name=train) 2>&1")
		}
		if !strings.Contains(trainLog, "checkpoint asked") {
			t.Errorf("the training was not asked to checkpoint: %q", trainLog)
		}
		if n := nodeNamed(swarmNodes(t, l), "lab-3"); n.Availability != "active" || n.Labels[swarmapi.LabelDriver] != "590.48.01" {
			t.Errorf("lab-3 after the resume: %s, labels %v", n.Availability, n.Labels)
		}

		// The training ends while the next resume waits for it.
		ended := make(chan string)
		go func() {
			time.Sleep(5 * time.Second)
			out, err := l.SSHCommand("lab-4", "docker exec $(docker ps -q --filter name=train) sh -c ': >/done'").CombinedOutput()
			ended <- fmt.Sprintf("%v %s", err, out)
		}()
		start = time.Now()
		r = runInit(t, append(args, "--resume", "--wait-for-jobs", "3m")...)
		if got := <-ended; got != "<nil> " {
			t.Errorf("ending the training: %s", got)
		}
		if r.code != cli.ExitOK {
			t.Fatalf("resume once the training ends: exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		t.Logf("last resume (lab-4 waited for, upgraded): %s; %s", time.Since(start).Round(100*time.Millisecond), upgradeReport(r.out))
		logs, _ := filepath.Glob(filepath.Join(r.logDir, "*", "lab-4.log"))
		if len(logs) != 1 {
			t.Fatalf("lab-4's log: %v", logs)
		}
		if b, err := os.ReadFile(logs[0]); err != nil || !strings.Contains(string(b), "warning: the finished GPU job task train.") {
			t.Errorf("no warning that activating lab-4 runs its finished GPU job again: %v", err)
		}
		nodes := swarmNodes(t, l)
		for _, h := range workers {
			assertDriverSwapped(t, l, h, "590.48.01", "580.95.05")
			if rebooted := l.BootID(t, h) != boots[h]; rebooted != (h != "lab-2") {
				t.Errorf("%s rebooted %v; want a reboot on every worker but lab-2, whose modules were swapped", h, rebooted)
			}
			n := nodeNamed(nodes, h)
			if _, marked := n.Labels["dev.gpukit.upgrade-cordoned"]; n.Availability != "active" || marked || n.Labels[swarmapi.LabelDriver] != "590.48.01" || len(n.GPUs) != 1 {
				t.Errorf("%s after the rollout: %s, GPUs %v, labels %v", h, n.Availability, n.GPUs, n.Labels)
			}
		}
		if got := l.BootID(t, "lab-1"); got != boots["lab-1"] {
			t.Error("the manager rebooted: it has no GPU")
		}
		r = runInit(t, "upgrade", "driver", "-i", inv4, "--driver", "590.48.01", "--state", state)
		if r.code != cli.ExitOK || r.counts.Changed != 0 || len(r.writeSteps()) != 0 {
			t.Errorf("a second upgrade: exit %d %+v writes %v\n%s", r.code, r.counts, r.writeSteps(), r.out)
		}

		// The job runs again on lab-4 (the activation made swarm reject its
		// finished task). A label the inventory now gives lab-4 waits for
		// it: init leaves lab-4's node as it is and says why, and the task
		// runs on; once the job is gone, init labels the node.
		waitFor("train running on lab-4 again", func() bool { return strings.Contains(trainTask(), " lab-4 Running") })
		train = strings.Fields(trainTask())[0]
		b, err := os.ReadFile(inv4)
		if err != nil {
			t.Fatal(err)
		}
		labelled := regexp.MustCompile(`(?m)^(    - name: lab-4\n)`).ReplaceAllString(string(b), "${1}      labels: {rack: r9}\n")
		invLabelled := filepath.Join(t.TempDir(), "swarm-4-labelled.yaml")
		if labelled == string(b) || os.WriteFile(invLabelled, []byte(labelled), 0o644) != nil {
			t.Fatalf("cannot label lab-4 in %s", inv4)
		}
		r = runInit(t, "init", "-i", invLabelled, "--driver", "590.48.01")
		if r.code != cli.ExitOK || r.counts.Changed != 0 || !strings.Contains(r.out, "lab-4 left as it is: updating it would make swarm restart its GPU tasks (train.") {
			t.Errorf("init with a new label on lab-4, which trains: exit %d %+v\n%s", r.code, r.counts, r.out)
		}
		if got := strings.Fields(trainTask()); len(got) == 0 || got[0] != train || nodeNamed(swarmNodes(t, l), "lab-4").Labels["rack"] != "" {
			t.Errorf("lab-4's training task %v (want %s) or its labels changed", got, train)
		}
		// The job done, its finished task still holds the GPU in swarm's
		// books (an update would run it again): init says to remove it.
		l.SSH(t, "lab-4", "docker exec $(docker ps -q --filter name=train) sh -c ': >/done'")
		waitFor("train complete", func() bool { return trainTask() == "" })
		r = runInit(t, "init", "-i", invLabelled, "--driver", "590.48.01")
		if r.code != cli.ExitOK || r.counts.Changed != 0 || !strings.Contains(r.out, "run its finished GPU jobs again (train): remove their services first") {
			t.Errorf("init with lab-4's job finished: exit %d %+v\n%s", r.code, r.counts, r.out)
		}
		l.SSH(t, "lab-1", "docker service rm serve train agent >/dev/null")
		waitFor("lab-4's tasks gone", func() bool { return l.SSH(t, "lab-4", "docker ps -q | wc -l") == "0" })
		r = runInit(t, "init", "-i", invLabelled, "--driver", "590.48.01")
		if r.code != cli.ExitOK || r.counts.Changed != 1 || nodeNamed(swarmNodes(t, l), "lab-4").Labels["rack"] != "r9" {
			t.Errorf("init once lab-4's tasks are gone: exit %d %+v, labels %v\n%s", r.code, r.counts, nodeNamed(swarmNodes(t, l), "lab-4").Labels, r.out)
		}
	})

	t.Run("mig apply partitions lab-2, which the swarm then knows by its MIG devices", func(t *testing.T) {
		raw, err := os.ReadFile(inv4)
		if err != nil {
			t.Fatal(err)
		}
		// The driver the rollout above left (verify checks it).
		invMIG := withMIG(t, strings.TrimRight(string(raw), "\n")+"\n  versions: {nvidiaDriver: 590.48.01}", "swarm-mig.yaml",
			"{layouts: {seven: [{profiles: {1g.10gb: 7}}]}}", map[string]string{"lab-2": "seven"})
		state := filepath.Join(t.TempDir(), "swarm.mig.json")
		start := time.Now()
		r := runInit(t, "mig", "apply", "-i", invMIG, "--state", state)
		if r.code != cli.ExitOK || r.counts.Changed != 1 || r.counts.Failed != 0 {
			t.Fatalf("mig apply: exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		t.Logf("mig apply on the swarm (lab-2 partitioned): %s", time.Since(start).Round(100*time.Millisecond))
		if got := migDevices(t, l, "lab-2"); got != strings.TrimSuffix(strings.Repeat("1g.10gb,", 7), ",") {
			t.Errorf("lab-2's MIG devices: %q", got)
		}
		n := nodeNamed(swarmNodes(t, l), "lab-2")
		migs := 0
		for _, g := range n.GPUs {
			if strings.HasPrefix(g, "MIG-") {
				migs++
			}
		}
		if migs != 7 || len(n.GPUs) != 7 || n.Availability != "active" {
			t.Errorf("lab-2 as the swarm knows it: %s, GPUs %v; want its 7 MIG devices", n.Availability, n.GPUs)
		}
		if n3 := nodeNamed(swarmNodes(t, l), "lab-3"); len(n3.GPUs) != 1 || !strings.HasPrefix(n3.GPUs[0], "GPU-") {
			t.Errorf("lab-3, without a layout: GPUs %v", n3.GPUs)
		}
		r = runInit(t, "mig", "apply", "-i", invMIG, "--state", state)
		if r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("mig apply again: exit %d %+v, writes %v", r.code, r.counts, r.writeSteps())
		}
	})
}

// busyboxImage builds the test image on a host: no registry is reachable
// from the lab, so a static busybox from Debian's busybox-static is imported.
const busyboxImage = `set -e
DEBIAN_FRONTEND=noninteractive apt-get -qq install -y busybox-static >/dev/null 2>&1
d=$(mktemp -d); mkdir -p $d/bin; cp /bin/busybox $d/bin/
for a in sh env sleep cat; do ln -s busybox $d/bin/$a; done
tar -C $d -c . | docker import -c 'CMD ["/bin/sh"]' - gpukit-lab/busybox:1 >/dev/null
rm -rf $d`

// withUUID copies capture c into a temporary directory with its GPU UUIDs
// replaced by uuid.
func withUUID(t *testing.T, c gpusim.Capture, uuid string) gpusim.Capture {
	t.Helper()
	files, err := filepath.Glob(c.Prefix + "__*")
	if err != nil || len(files) == 0 {
		t.Fatalf("capture %s: %v", c.Prefix, err)
	}
	dir := t.TempDir()
	zero := regexp.MustCompile(`GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), zero.ReplaceAll(b, []byte(uuid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The model's MIG profiles (-lgip) go with it.
	if b, err := os.ReadFile(migsim.LGIPFile(c.Prefix)); err == nil {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(migsim.LGIPFile(c.Prefix))), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return gpusim.Capture{Prefix: filepath.Join(dir, filepath.Base(c.Prefix))}
}

// swarmInventory writes src as a swarm inventory (the first host the
// manager), leaving out the host drop, if any.
func swarmInventory(t *testing.T, src, dst, drop string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// The platform has a test of its own (TestLabSwarmPlatform): off here.
	s := strings.Replace(string(b), "\nspec:\n", "\nspec:\n  orchestrator: swarm\n  addons: {ingress: {enabled: false}, monitoring: {enabled: false}}\n", 1)
	s = strings.Replace(s, "roles: [control-plane]", "roles: [manager]", 1)
	s = withoutHost(s, drop)
	// The host's entry, not its name: lab 4's cluster is gpukit-lab-4.
	if !strings.Contains(s, "orchestrator: swarm") || !strings.Contains(s, "roles: [manager]") || (drop != "" && strings.Contains(s, "name: "+drop+"\n")) {
		t.Fatalf("cannot make a swarm inventory of %s:\n%s", src, s)
	}
	if err := os.WriteFile(dst, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// withoutHost is the lab inventory inv without the spec.hosts entry of
// host ("": inv as it is).
func withoutHost(inv, host string) string {
	if host == "" {
		return inv
	}
	return regexp.MustCompile(`(?m)^    - name: `+regexp.QuoteMeta(host)+`\n(      .*\n)+`).ReplaceAllString(inv, "")
}

// swarmNodes are the nodes as the manager lists them.
func swarmNodes(t *testing.T, l *lab.Lab) []swarmapi.Node {
	t.Helper()
	nodes, err := swarmapi.ParseNodes([]byte(l.SSH(t, "lab-1", "docker node inspect $(docker node ls -q)")))
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func nodeNamed(nodes []swarmapi.Node, host string) swarmapi.Node {
	for _, n := range nodes {
		if n.Hostname == host {
			return n
		}
	}
	return swarmapi.Node{}
}

// sshLogins counts gpukit's logins (user deploy; the test logs in as root)
// on each host, from sshd's journal.
func sshLogins(t *testing.T, l *lab.Lab, hosts ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, h := range hosts {
		n, err := strconv.Atoi(l.SSH(t, h, "journalctl -u ssh --no-pager -q | grep -c 'Accepted publickey for deploy' || true"))
		if err != nil {
			t.Fatal(err)
		}
		out[h] = n
	}
	return out
}

// assertNowhere fails when secret shows in the output or any file under
// logDir.
func assertNowhere(t *testing.T, secret, out, logDir string) {
	t.Helper()
	if strings.Contains(out, secret) {
		t.Errorf("a join token is in the output")
	}
	err := filepath.WalkDir(logDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), secret) {
			return fmt.Errorf("a join token is in %s", p)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}
