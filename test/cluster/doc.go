// Package cluster runs a real Kubernetes cluster on one machine for the
// end-to-end tests of the weave-net DaemonSet, and for a person (`make
// cluster`): etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler in an "underlay" network namespace, and per node a network
// namespace host (eth0 on the underlay bridge, 192.168.100.N) with its own
// mount namespace running containerd (CRI), a kubelet and kube-proxy
// (iptables mode). Pods are real: the kubelet asks containerd, containerd
// runs runc and calls the CNI plugin the DaemonSet installed.
//
// What it takes from the machine: the Kubernetes binaries v1.37.2 built by
// test/k8s/bins.sh (`bins.sh cluster`, run by Start when missing),
// containerd 1.6 and runc from Debian (test/deps.sh), iptables, ip,
// nsenter, unshare. There is no registry: the pause image (a static Go
// program, ./pause), a busybox image for test pods (Debian's static
// busybox) and the weave-kube image (internal/image, as `make image`
// builds it) are imported into every node's containerd.
//
// Each node's host paths (/var/lib/weave, /opt/cni/bin, /etc/cni/net.d,
// /var/lib/cni, /var/lib/kubelet, /var/log, /run/containerd) are bind
// mounts of per-node directories inside its private mount namespace, so
// the nodes do not share what real nodes never share, and nothing is
// written to the machine's own paths. Each node gets its own cgroup root
// (/<prefix>-<node>) in every cgroup v1 hierarchy (this machine is cgroup
// v1; the kubelet runs with failCgroupV1: false, cgroupDriver cgroupfs).
//
// Stop kills every process of the cluster (by cgroup and by network
// namespace), removes the namespaces, cgroups and directories, restores
// the kernel settings the kubelet changes (vm.overcommit_memory,
// kernel.panic, ...), and removes the mount points it had to create;
// Leftovers reports anything still there (the tests assert none).
package cluster
