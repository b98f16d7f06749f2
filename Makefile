# Weave (Go successor to Weave Net 2.8.1). `make help` lists the targets.
# Targets that create namespaces (test, e2e, demo, bench) need root.

SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c

GO        ?= go
FUZZTIME  ?= 10s
TESTFLAGS ?=
SCRIPTS   := weave test/deps.sh test/k8s/bins.sh test/demo.sh test/bench.sh test/scale.sh .ci/run mesh/patches/apply.sh plugin/docker/v2/build.sh

.DEFAULT_GOAL := help
.PHONY: help build deps test test-unit e2e fuzz demo bench bench-scale lint tidy-check clean mesh-patch k8s-bins docker-plugin image cluster

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

MODULE  := github.com/seedf75a49c6/weave
# The version is internal/version.Base plus "+<git hash>[.dirty]", a semantic
# version (3.0.0-dev+1a2b3c4d5e6f) that tools compare with 2.8.1's; a release
# sets the whole string: make build VERSION=3.0.0.
GITREV  := $(shell r=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || r=$$r.dirty; echo $$r; })
VERSION ?=
LDFLAGS := -X $(MODULE)/internal/version.Build=$(GITREV) -X '$(MODULE)/internal/version.Version=$(VERSION)'

# github.com/weaveworks/mesh is built with weave's patch (docs/mesh-patch.md):
# mesh-patch writes .build/go.work, a workspace replacing the pinned module by
# a patched copy, and every go command below uses it through GOWORK.
export GOWORK := $(CURDIR)/.build/go.work

mesh-patch: ## apply mesh/patches/mesh.patch to a copy of the pinned mesh module in .build/
	@sh mesh/patches/apply.sh >/dev/null

build: mesh-patch ## build bin/weaver, bin/weaveutil and the CNI plugins bin/weave-net, bin/weave-ipam (version 3.0.0-dev+<git hash>)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./prog/...

docker-plugin: build ## the Docker v2 managed plugin's directory in .build/docker-plugin (then: docker plugin create NAME .build/docker-plugin)
	sh plugin/docker/v2/build.sh bin/weaver .build/docker-plugin

# The weave-kube image, built from our static binaries and the Debian
# iptables/kmod of this host, nothing pulled (internal/image); IMAGE names
# it in the archive and in the manifest written next to it.
IMAGE     ?= localhost/weave-kube:dev-$(GITREV)
IMAGE_DIR := .build/image
image: mesh-patch ## the weave-kube image IMAGE as .build/image/weave-kube.tar (docker/podman load, ctr import) + the manifest naming it
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(IMAGE_DIR)/bin/ ./prog/...
	$(GO) run ./internal/image/mkimage -bin $(IMAGE_DIR)/bin -name '$(IMAGE)' -o $(IMAGE_DIR)/weave-kube.tar \
	  -manifest prog/weave-kube/weave-daemonset-k8s.yaml -manifest-out $(IMAGE_DIR)/weave-daemonset-k8s.yaml

deps: ## install test/demo/bench tools with apt-get when missing
	@sh test/deps.sh

# kube-apiserver and etcd for the tests against a real Kubernetes API (test/k8s),
# and kubelet, kube-proxy, kube-scheduler, kube-controller-manager for the
# real cluster (test/cluster), built from Go modules into a cache dir
# outside the repo; a no-op when there.
k8s-bins: ## build kube-apiserver, etcd, kubelet, kube-proxy, scheduler, controller-manager into the test cache (minutes when cold)
	@sh test/k8s/bins.sh cluster

cluster: deps image k8s-bins ## a real 3-node cluster (containerd + kubelet + kube-proxy per node) running the weave-net DaemonSet from IMAGE; Ctrl-C tears down (root)
	$(GO) run ./test/cluster/up -image $(IMAGE_DIR)/weave-kube.tar -manifest $(IMAGE_DIR)/weave-daemonset-k8s.yaml

# test/testsum prints each package's result, the output of failed tests,
# every skipped test with its reason, and "tests: N passed, N failed, N
# skipped"; it fails when any test failed or none ran.
# Tests whose assertions mean nothing under -race (allocation counts) or
# that it slows past their timing (the 50-router simulation) skip there,
# loudly, and run in a second pass without it.
NORACE_TESTS := DoesNotAllocate|TestScale50

# The real cluster (test/cluster: kubelets, containerd, a control plane)
# runs alone, after the rest: it needs the machine's cores for itself, and
# its nodes' start-up timings do not survive the e2e package beside it.
CLUSTER_PKG := ./test/cluster

test: deps mesh-patch k8s-bins ## everything with -race (unit, netns, e2e; as root), the race-free tests (NORACE_TESTS) without it, then the real cluster alone
	( rc=0; \
	  $(GO) test -race -json -timeout 25m $(TESTFLAGS) $$($(GO) list ./... | grep -v '/test/cluster$$') || rc=1; \
	  $(GO) test -json -count=1 -timeout 15m -run '$(NORACE_TESTS)' $(TESTFLAGS) ./... || rc=1; \
	  $(GO) test -race -json -count=1 -timeout 20m $(TESTFLAGS) $(CLUSTER_PKG) || rc=1; \
	  exit $$rc ) | $(GO) run ./test/testsum

test-unit: mesh-patch ## unit tests with -race, without the e2e package (root-only tests skip unless root)
	$(GO) test -race $(TESTFLAGS) $$($(GO) list ./... | grep -v /test/e2e)

e2e: deps mesh-patch k8s-bins ## end-to-end tests only (root): real routers in namespace hosts
	$(GO) test -count=1 -timeout 20m $(TESTFLAGS) ./test/e2e/...

fuzz: mesh-patch ## run every Fuzz target for FUZZTIME (default 10s) each
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

demo: deps build ## three namespace hosts, encrypted, one link cut, pings and status (root)
	sh test/demo.sh

bench: deps build ## one table: direct veth, raw VXLAN, fastdp, sleeve plain/encrypted, wireguard-go; then go benchmarks (root); then the 200/500-router simulation
	bash test/bench.sh
	bash test/scale.sh

bench-scale: mesh-patch ## only the 200/500-router simulation (mesh, IPAM, liveness): convergence, gossip bytes, memory (SIZES=, WINDOW=, PROFILE=dir)
	bash test/scale.sh

lint: mesh-patch ## gofmt, go vet, sh -n and shellcheck on the scripts, then go mod tidy -diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@for s in $(SCRIPTS); do \
	  [ -f $$s ] || continue; \
	  if head -1 $$s | grep -q bash; then bash -n $$s; else sh -n $$s; fi || exit 1; \
	done
	@if command -v shellcheck >/dev/null; then \
	  for s in $(SCRIPTS); do [ ! -f $$s ] || shellcheck $$s || exit 1; done; \
	else echo "shellcheck not installed; skipped"; fi
	GOWORK=off $(GO) mod tidy -diff

tidy-check: ## fail when go.mod/go.sum are not tidy
	GOWORK=off $(GO) mod tidy -diff

clean: ## remove build and bench output
	rm -rf bin netbench-out test/out .build
