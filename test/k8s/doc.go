// Package k8s runs a real Kubernetes API server (kube-apiserver + etcd, built
// from Go modules) for tests, with RBAC on and token authentication, so
// tests see the API's real semantics: watches, resource versions, optimistic
// concurrency, and permission errors.
//
// Typical use:
//
//	srv := k8s.Start(t)                                 // or k8s.New() from TestMain
//	admin := srv.Admin(t)                                // kubernetes.Interface, system:masters
//	srv.CreateNode(t, "node1", "192.168.100.1")          // a Node as a kubelet registers it
//	cfg := srv.ServiceAccountConfig(t, "kube-system", "weave-net") // a token of that ServiceAccount
//	kubeconfig := srv.WriteKubeconfig(t, cfg)            // for a child process (KUBECONFIG=...)
//	srv.Kubectl(t, kubeconfig, "apply", "--dry-run=server", "-f", "x.yaml")
//
// For programs running in namespace hosts (internal/netnstest), start the
// server inside a namespace they reach, e.g. the underlay with an address
// on its bridge: k8s.StartWithOptions(t, k8s.Options{NetNS: tp.Underlay,
// Address: "192.168.100.254"}); the test's own clients then dial from
// inside that namespace, and WriteKubeconfig's file points the hosts at
// the address (see test/e2e/kube_linux_test.go).
//
// The binaries (kube-apiserver, etcd, and a kubectl of the same version)
// come from test/k8s/bins.sh (also `make k8s-bins`): it builds them in a
// throwaway module into a cache dir outside the repository
// ($WEAVE_K8S_CACHE, else $XDG_CACHE_HOME/weave-test/k8s, else
// ~/.cache/weave-test/k8s) and is a no-op when they are there. When they are
// missing, Start runs it (a cold build takes minutes). WEAVE_K8S_BINS names a
// directory holding kube-apiserver, etcd (and optionally kubectl) to use
// instead. Kubectl uses the kubectl bins.sh built, else the one on PATH.
//
// There is no controller-manager, scheduler or kubelet: tests create Nodes
// and Pods (with spec.nodeName) themselves and write their status
// (CreateNode, CreatePod, SetPodIP) as a kubelet would. ServiceAccounts get
// no automatic token Secret; ServiceAccountConfig uses the TokenRequest API.
// Nodes stay Unknown and deleted namespaces stay Terminating.
//
// Every server gets its own free ports and directories, so parallel test
// packages may each start one. Start needs no root; it fails (never skips)
// when the binaries cannot be built.
package k8s
