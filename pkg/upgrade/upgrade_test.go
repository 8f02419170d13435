package upgrade

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		of100    int
		of3      int
		bad      bool
		asString string
	}{
		{in: "1", of100: 1, of3: 1, asString: "1"},
		{in: "10", of100: 10, of3: 10, asString: "10"},
		{in: "10%", of100: 10, of3: 1, asString: "10%"},
		{in: "25%", of100: 25, of3: 1, asString: "25%"},
		{in: "100%", of100: 100, of3: 3, asString: "100%"},
		{in: "0", bad: true}, {in: "-1", bad: true}, {in: "0%", bad: true}, {in: "101%", bad: true}, {in: "x", bad: true}, {in: "", bad: true},
	} {
		b, err := ParseBudget(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted", tc.in)
			}
			continue
		}
		if err != nil || b.Of(100) != tc.of100 || b.Of(3) != tc.of3 || b.String() != tc.asString {
			t.Errorf("%q: %+v (of 100: %d, of 3: %d, %s), %v", tc.in, b, b.Of(100), b.Of(3), b, err)
		}
	}
}

func gpuPod(owner string, annotations, labels map[string]string, gpu bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: annotations, Labels: labels},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "side"}, {Name: "main"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if gpu {
		p.Spec.Containers[1].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	}
	if owner != "" {
		kind, name, _ := strings.Cut(owner, "/")
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}
	}
	return p
}

func TestTraining(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"GPU pod of a Job", gpuPod("Job/train", nil, nil, true), true},
		{"GPU pod of a PyTorchJob", gpuPod("PyTorchJob/bert", nil, nil, true), true},
		{"GPU pod of a JobSet (TrainJob v2)", gpuPod("JobSet/llm", nil, nil, true), true},
		{"GPU pod labelled by the training operator", gpuPod("", nil, map[string]string{"training.kubeflow.org/job-name": "x"}, true), true},
		{"GPU step of a Kubeflow pipeline (Argo Workflow)", gpuPod("Workflow/train-pipeline-x7k2q", nil, nil, true), true},
		{"GPU pod labelled by Volcano", gpuPod("", nil, map[string]string{"volcano.sh/job-name": "mpi"}, true), true},
		{"GPU pod of a ReplicaSet (serving)", gpuPod("ReplicaSet/serve-1", nil, nil, true), false},
		{"CPU pod of a Job", gpuPod("Job/etl", nil, nil, false), false},
		{"annotated training", gpuPod("ReplicaSet/r", map[string]string{AnnotationTraining: "true"}, nil, false), true},
		{"annotated not training", gpuPod("Job/j", map[string]string{AnnotationTraining: "false"}, nil, true), false},
		{"MIG slice of a Job", func() *corev1.Pod {
			p := gpuPod("Job/j", nil, nil, false)
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("1")}
			return p
		}(), true},
		{"finished Job pod", func() *corev1.Pod {
			p := gpuPod("Job/j", nil, nil, true)
			p.Status.Phase = corev1.PodSucceeded
			return p
		}(), false},
	} {
		if got, why := Training(tc.pod); got != tc.want || (got && why == "") {
			t.Errorf("%s: %v (%q), want %v", tc.name, got, why, tc.want)
		}
	}
}

func TestHookOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		annotations map[string]string
		argv        string
		container   string
		timeout     time.Duration
		err         string
	}{
		{annotations: map[string]string{AnnotationCheckpoint: "signal:SIGUSR1"}, argv: "kill -s USR1 1", container: "main", timeout: DefaultHookTimeout},
		{annotations: map[string]string{AnnotationCheckpoint: "signal:usr2", AnnotationCheckpointTimeout: "30s", AnnotationCheckpointContainer: "side"}, argv: "kill -s USR2 1", container: "side", timeout: 30 * time.Second},
		{annotations: map[string]string{AnnotationCheckpoint: "exec:python -m ckpt --now"}, argv: "sh -c python -m ckpt --now", container: "main", timeout: DefaultHookTimeout},
		{annotations: map[string]string{AnnotationCheckpoint: "signal:SIGKILL"}, err: "want signal:NAME"},
		{annotations: map[string]string{AnnotationCheckpoint: "exec:"}, err: "needs a command"},
		{annotations: map[string]string{AnnotationCheckpoint: "http://x"}, err: "want signal:NAME or exec:COMMAND"},
		{annotations: map[string]string{AnnotationCheckpoint: "signal:SIGTERM", AnnotationCheckpointTimeout: "soon"}, err: "want a duration"},
		{annotations: map[string]string{AnnotationCheckpoint: "exec:ckpt", AnnotationCheckpointTimeout: "1h"}, argv: "sh -c ckpt", container: "main", timeout: time.Hour},
		{annotations: map[string]string{AnnotationCheckpoint: "exec:ckpt", AnnotationCheckpointTimeout: "61m"}, err: "at most 1h0m0s"},
	} {
		h, err := HookOf(gpuPod("Job/j", tc.annotations, nil, true))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "pod ns/p") {
				t.Errorf("%v: err %v, want %q naming the pod", tc.annotations, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(h.Argv(), " ") != tc.argv || h.Container != tc.container || h.Timeout != tc.timeout {
			t.Errorf("%v: %+v %v", tc.annotations, h, err)
		}
	}
	if h, err := HookOf(gpuPod("Job/j", nil, nil, true)); h != nil || err != nil {
		t.Errorf("no annotation: %+v %v", h, err)
	}
}

// The state survives a crash whole: written 0600 through a rename, read
// back as it was.
func TestStateSaveAndLoad(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "upgrades")
	path := filepath.Join(dir, "c.driver.json")
	now := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	s := NewState(path, "c", "c.yaml", Target{Driver: "590.48.01", CUDA: "13.0"}, now)
	if err := s.Set("gpu-1", InProgress, "", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("gpu-1", Done, "", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("gpu-2", Failed, "not verified", now); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, %v", fi.Mode(), err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v, %v", di.Mode(), err)
	}
	got, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != s.Target || got.Finished != nil || len(got.Names(Done)) != 1 || got.Names(Failed)[0] != "gpu-2" {
		t.Errorf("loaded %+v", got)
	}
	if n, _ := got.Node("gpu-1"); n.Waves != 1 {
		t.Errorf("gpu-1 waves %d", n.Waves)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
	if _, err := LoadState(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), ErrNoState.Error()) {
		t.Errorf("missing state: %v", err)
	}
}

// Nodes recorded at once all reach the file (the last save holds every
// one), and a state that cannot be written says so.
func TestStateConcurrentSetsAndWriteErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.driver.json")
	now := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	s := NewState(path, "c", "c.yaml", Target{Driver: "590.48.01"}, now)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if err := s.Set(fmt.Sprintf("gpu-%02d", i), Done, "", now); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Names(Done)); n != 64 {
		t.Errorf("%d of 64 nodes in the file", n)
	}
	// A file where the state's directory would be: every write fails.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s = NewState(filepath.Join(blocked, "c.driver.json"), "c", "c.yaml", Target{Driver: "590.48.01"}, now)
	if err := s.Set("gpu-1", InProgress, "", now); err == nil {
		t.Error("a state that cannot be written: no error")
	}
}

// A hook's output keeps its end, within a bound.
func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 8}
	if _, err := b.Write([]byte("step 1\n")); err != nil || b.String() != "step 1\n" {
		t.Fatalf("short output: %q %v", b.String(), err)
	}
	for range 1000 {
		_, _ = b.Write([]byte("noise noise noise\n"))
	}
	_, _ = b.Write([]byte("saved\n"))
	if got := b.String(); got != "[...]"+"noise\nsaved\n"[len("noise\nsaved\n")-8:] || len(got) != 8+len("[...]") {
		t.Errorf("long output kept %q", got)
	}
}

// The disk where the rollout state is written fills up: Save says so (the
// rollout stops on a record it could not keep), and the state saved before
// is still there, whole. A real full filesystem: a 64 KiB tmpfs (root).
func TestStateSaveOnAFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		if os.Getenv("GPUKIT_LAB") == "1" {
			t.Fatalf("mounting a tmpfs (GPUKIT_LAB=1 runs this as root): %v", err)
		}
		t.Skipf("mounting a tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "lab.driver.json")
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	s := NewState(path, "lab", "inventory.yaml", Target{Driver: "590.48.01"}, now)
	if err := s.Set("gpu-1", Done, "", now); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Fill the rest of the filesystem.
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v", err)
	}
	err = s.Set("gpu-2", InProgress, "", now.Add(time.Minute))
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Save on a full disk: %v, want ENOSPC", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("the error does not name the file: %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Errorf("the state saved before changed:\n%s\nwant\n%s", after, before)
	}
	if got, err := LoadState(path); err != nil || got.Nodes["gpu-1"].Status != Done {
		t.Errorf("LoadState after: %v %+v", err, got)
	}
}
