#!/bin/sh
# bins.sh - build kube-apiserver, kubectl and etcd from the Go module proxy into a
# cache directory outside the repository, for the tests that need a real
# Kubernetes API server (package test/k8s). A no-op when they are present.
# `bins.sh cluster` also builds what a real cluster's nodes and control plane
# run (kubelet, kube-proxy, kube-scheduler, kube-controller-manager; package
# test/cluster); containerd and runc come from Debian (test/deps.sh).
#
# The builds happen in throwaway modules generated under the cache dir: the
# project's go.mod never sees Kubernetes or etcd. k8s.io/kubernetes replaces
# its staging modules with ./staging/..., which are not in its module zip, so
# the throwaway module replaces each of them with the published v0.x release.
# Flags (-trimpath, ldflags, CGO_ENABLED) are fixed: changing any of them
# turns an instant rebuild into a full one.
#
# Cache dir: $WEAVE_K8S_CACHE, else $XDG_CACHE_HOME/weave-test/k8s, else
# $HOME/.cache/weave-test/k8s. Binaries land in <cache>/bin.
set -eu

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3

cache=${WEAVE_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weave-test/k8s}
bin=$cache/bin
stamp=$bin/.stamp
want="kubernetes=$K8S_VERSION etcd=$ETCD_VERSION kubectl"
# The cluster set has its own stamp, so that an older bins.sh (server set
# only) still finds its own stamp unchanged.
CLUSTER_CMDS="kubelet kube-proxy kube-scheduler kube-controller-manager"
cluster_stamp=$bin/.stamp-cluster
cluster_want="kubernetes=$K8S_VERSION $CLUSTER_CMDS"
case ${1:-server} in
server) cluster=false ;;
cluster) cluster=true ;;
*)
	echo "usage: bins.sh [server|cluster]" >&2
	exit 2
	;;
esac

server_built() { [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kubectl" ] && [ -x "$bin/etcd" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; }
cluster_built() {
	$cluster || return 0
	for c in $CLUSTER_CMDS; do [ -x "$bin/$c" ] || return 1; done
	[ "$(cat "$cluster_stamp" 2>/dev/null)" = "$cluster_want" ]
}
built() { server_built && cluster_built; }
built && exit 0

mkdir -p "$cache" "$bin"
# One builder at a time: parallel test packages may all find the cache empty.
exec 9>"$cache/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
built && exit 0

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
start=$(date +%s)

# gen_module DIR MODPATH IMPORT: a module whose only file imports IMPORT
# under a build tag that never compiles, so tidy keeps its requirements.
gen_module() {
	mkdir -p "$1"
	rm -f "$1/go.mod" "$1/go.sum"
	printf 'module %s\n\ngo 1.26.0\n' "$2" >"$1/go.mod"
	printf '//go:build tools\n\n// Package tools pins %s for bins.sh.\npackage tools\n\nimport _ "%s"\n' "$3" "$3" >"$1/tools.go"
}

# build_kube CMD...: build k8s.io/kubernetes/cmd/CMD for each CMD, all in
# one module (they share most of their packages, so the second and later
# builds reuse the first one's cache).
build_kube() {
	dir=$cache/src/kube-apiserver
	gen_module "$dir" weave-test/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kubectl"\n' >"$dir/kubectl.go"
	rm -f "$dir/cluster.go"
	if $cluster; then
		{
			printf '//go:build tools\n\npackage tools\n\nimport (\n'
			for c in $CLUSTER_CMDS; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
			printf ')\n'
		} >"$dir/cluster.go"
	fi
	cd "$dir"
	go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >kubernetes.json
	gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' kubernetes.json)
	go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
	# Every "k8s.io/x => ./staging/src/k8s.io/x" replace, except the two
	# sample modules that are never published (nor required).
	sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod" | while read -r m; do
		case $m in k8s.io/sample-cli-plugin | k8s.io/sample-controller) continue ;; esac
		go mod edit -replace="$m=$m@$STAGING_VERSION"
	done
	go mod tidy
	v=k8s.io/component-base/version
	major=$(echo "$K8S_VERSION" | sed 's/^v\([0-9]*\)\..*/\1/')
	minor=$(echo "$K8S_VERSION" | sed 's/^v[0-9]*\.\([0-9]*\)\..*/\1/')
	for cmd in "$@"; do
		go build -trimpath -o "$bin/$cmd" \
			-ldflags "-s -w -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=$major -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
			"k8s.io/kubernetes/cmd/$cmd"
	done
}

build_etcd() {
	dir=$cache/src/etcd
	gen_module "$dir" weave-test/etcd go.etcd.io/etcd/server/v3
	cd "$dir"
	go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
	go mod tidy
	go build -trimpath -o "$bin/etcd" -ldflags "-s -w" go.etcd.io/etcd/server/v3
}

if ! server_built; then
	echo "bins.sh: building etcd $ETCD_VERSION, kube-apiserver and kubectl $K8S_VERSION into $bin (minutes on a cold cache)" >&2
	(build_etcd)
	(build_kube kube-apiserver kubectl)
	echo "$want" >"$stamp"
	echo "bins.sh: server set done in $(($(date +%s) - start))s" >&2
fi
if ! cluster_built; then
	cstart=$(date +%s)
	echo "bins.sh: building $CLUSTER_CMDS $K8S_VERSION into $bin" >&2
	# shellcheck disable=SC2086 # the command list is split on purpose
	(build_kube $CLUSTER_CMDS)
	echo "$cluster_want" >"$cluster_stamp"
	echo "bins.sh: cluster set done in $(($(date +%s) - cstart))s" >&2
fi
