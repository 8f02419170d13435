# gpukit - see README.md. Every target works on a fresh Debian/Ubuntu machine as root.
SHELL      := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)

VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE       ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG        := github.com/gpukit/gpukit/internal/version
LDFLAGS    := -s -w -X $(PKG).Version=$(VERSION) -X $(PKG).Commit=$(COMMIT) -X $(PKG).Date=$(DATE)
BIN        := bin/gpukit
HOSTS      ?= 3
LAB        := test/lab/lab.sh
# 60m: test/e2e, the longest package (the end-to-end lab tests, the kubeadm ones alone first), took 25-41 min on 2 CPUs
GO_TEST    ?= go test -count=1 -timeout 60m
FUZZTIME   ?= 2m
# The Go toolchain gpukit's binary is built with, and go.mod's toolchain line (`go install` with
# GOTOOLCHAIN=auto builds with it too). go1.26.8 (go.mod's go line, this machine's Go) has ten
# standard-library vulnerabilities gpukit's code reaches (net/http, crypto/x509, crypto/tls,
# net/textproto: make vulncheck lists them); go1.27.3 has every fix and the Go module proxy serves
# it (the go command fetches it once, 76 MB). The tests build with the machine's Go.
RELEASE_GO ?= go1.27.3
# govulncheck and the Go vulnerability database, pinned: both come from the Go module proxy as
# modules (the database's OSV files are read from the module cache), so `make vulncheck` works
# wherever the proxy or a warm module cache does, without vuln.go.dev.
VULN       := golang.org/x/vuln/cmd/govulncheck@v1.9.0
VULNDB     := golang.org/x/vulndb@v0.0.0-20261105234957-e22db6528018

.PHONY: all build demo-tools fixtures test k8s unit lint vulncheck e2e demo bench bench-kubeflow fuzz lab-up lab-down cluster-up cluster-down deps clean

all: build

deps:
	@hack/install-deps.sh

# The release build's toolchain and flags; the demo's tools use them too, so that they reuse the
# packages make build compiled (about 1,000 of gpukit's) instead of compiling them again.
GO_BUILD   := GOTOOLCHAIN=$(RELEASE_GO) CGO_ENABLED=0 go build -trimpath

build:
	$(GO_BUILD) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gpukit

## demo-tools: the test-only programs hack/demo.sh runs (the GPU simulator's installer, the lab's
## Kubernetes site), into bin/demo.
demo-tools:
	$(GO_BUILD) -o bin/demo/ ./test/gpusim/cmd/gpusim-install ./test/cluster/cmd/kube-site

## fixtures: the files other projects wrote that tests, the demo and the bench read (chart archives,
## Kubeflow's manifests, inventories), locked by sha256 in test/fixtures/upstream.yaml, into .fixtures/
## ($GPUKIT_FIXTURES_CACHE): from a local mirror laid out the same way ($GPUKIT_FIXTURES), else
## downloaded where upstream publishes the bytes as they are.
fixtures:
	go run ./test/fixtures/cmd/fixtures

## test: every test, including the lab integration tests (they need root; skipped otherwise) and
## the Kubernetes ones (test/k8s built first: cold about 20 minutes, then cached). vet compiles the
## packages the tests import first, with the compiler collecting garbage less often (GOGC=400:
## 13 % less wall time on 2 cores; the tests themselves run with the default).
test: deps k8s fixtures
	GOGC=400 go vet ./...
	GPUKIT_K8S=1 $(GO_TEST) ./...

## k8s: every test/k8s build (Kubernetes versions, containerd/runc/crictl/CoreDNS), cached.
k8s:
	test/k8s/build.sh all >/dev/null

## unit: tests that need no lab (fast; the lab tests skip themselves).
unit:
	GPUKIT_LAB=0 $(GO_TEST) ./...

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	go vet ./...
	shellcheck $(LAB) hack/*.sh bench/*.sh test/k8s/*.sh test/cluster/testdata/*.sh
	cd test/k8s && go vet ./...
	cd test/k8s/kube-1.35 && go vet ./...
	cd test/k8s/kube-1.36 && go vet ./...
	cd test/k8s/flannel && go vet ./...
	$(MAKE) vulncheck

## vulncheck: the vulnerabilities of the standard library (RELEASE_GO's, the binary's) and of the
## modules gpukit's code reaches, from the pinned database (update VULNDB to the newest
## pseudo-version the proxy serves). `make vulncheck RELEASE_GO=local` checks the machine's Go.
vulncheck:
	db=$$(go mod download -json $(VULNDB) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	test -d "$$db/data/osv" && GOTOOLCHAIN=$(RELEASE_GO) go run $(VULN) -db "file://$$db/data/osv" ./...

## e2e: the lab integration tests only.
e2e: deps fixtures
	$(GO_TEST) -run 'Lab' ./...

## demo: a 3-host local lab; the workers get the GPU simulator (test/gpusim, test only: simulated
## GPUs replaying a real H100 capture); gpukit plan, gpukit init, and init again (0 changed).
## ORCHESTRATOR=swarm: the same, then a GPU-aware Docker Swarm (1 manager, 2 GPU workers), a
## service reserving a GPU, gpukit status.
## It builds gpukit and fetches the fixtures itself, after starting the Kubernetes build (first run).
demo: deps
	@ORCHESTRATOR=$(ORCHESTRATOR) hack/demo.sh $(HOSTS)

bench: deps build
	bench/facts.sh

## gpukit kubeflow deploy against the upstream kustomize | kubectl apply loop, fresh control planes each.
bench-kubeflow: deps build fixtures
	bench/kubeflow.sh

fuzz:
	go test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./pkg/inventory/
	go test -run '^$$' -fuzz '^FuzzParseSMIQuery$$' -fuzztime $(FUZZTIME) ./pkg/facts/

lab-up: deps
	@$(LAB) up $(HOSTS)

lab-down:
	@$(LAB) down

## cluster-up: a real Kubernetes control plane on loopback (etcd, apiserver, controller manager,
## scheduler, kwok GPU nodes), built once from Go modules in test/k8s (cold: about 5 minutes).
cluster-up:
	@test/k8s/cluster.sh up

cluster-down:
	@test/k8s/cluster.sh down

clean:
	rm -rf bin dist
