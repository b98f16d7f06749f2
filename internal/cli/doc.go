// Package cli implements the `weave` command: every verb of Weave Net
// 2.8.1's script (launch, stop, reset, connect, forget, attach, detach, ps,
// status, report, version, expose, hide, rmpeer, setup-cni) with the same
// output, so scripts written for Weave keep working.
//
// The top-level `weave` file is only a POSIX sh shim that finds the
// weaveutil binary and execs it; prog/weaveutil calls Run. Talking to the
// router goes through internal/api; touching the kernel (bridge, veths,
// iptables) goes through the Kernel interface, which internal/netdev
// implements and tests replace with a fake.
//
// Several routers can run side by side on one machine, one per network
// namespace, as long as each gets its own WEAVE_RUN_DIR and WEAVE_DATA_DIR
// (and its own loopback, which a namespace provides).
//
// The package is Linux-only by design (process groups, /proc, namespaces).
package cli
