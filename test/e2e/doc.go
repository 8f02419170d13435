// Package e2e holds the end-to-end lab tests: the gpukit command line run
// in-process (cli.Execute, as cmd/gpukit runs it) against lab hosts
// (test/lab) with simulated GPUs (test/gpusim), from an air-gapped site's
// mirrors (test/cluster). They need root and skip without a lab
// (GPUKIT_LAB=0; GPUKIT_LAB=1 makes them mandatory); the package takes
// 25-41 minutes on 2 CPUs (41 on 2026-12-05, warm caches).
//
// Order: the two kubeadm tests (TestLabKubernetes, TestLabKubernetesVariants)
// do not call t.Parallel, so Go runs them - with the other sequential tests,
// in file order - before it resumes the tests that call t.Parallel
// (the NVIDIA and swarm tests), never beside them: kubeadm clusters beside
// those starved their hosts of CPU on a 2-core machine.
package e2e
