//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/kube"
)

// reclaimP50 is issue 28's target: a deleted dead Node is reclaimed
// within 5 s (p50), whether its connections reset or it vanished.
const reclaimP50 = 5 * time.Second

// TestKubeFaultNodeDeleteReclaim: no fresh node logs the false lost-
// database ERROR on its first start. h4 joins a 3-node weave-kube cluster
// as a new Node, takes address space (a pod), then dies, and its Node is
// deleted at once, as an operator or a cloud controller would; faultRuns
// times SIGKILLed (weaver and weave-kube; the kernel resets its
// connections) and faultRuns times vanished silently (every packet to and
// from it dropped, processes still running). The time from the fault to
// the dead peer leaving the peer list (its space taken over by exactly
// one survivor) is the sample: p50 <= 5 s. Before issue 28 the first
// rmpeer was refused and retried after 10 s (~10.5 s), and a silent node
// waited for mesh's 60 s timeout (60.5 s).
func TestKubeFaultNodeDeleteReclaim(t *testing.T) {
	kc := newKubeCluster(t, 4)
	for i := 1; i <= 3; i++ {
		kc.join(i)
	}
	t.Cleanup(func() {
		if t.Failed() {
			kc.logReclaimLines(1, 2, 3)
		}
	})
	for i := 1; i <= 3; i++ {
		kc.waitPeers(i, "h1", "h2", "h3")
	}
	kc.waitNetworkUp("h1", "h2", "h3")
	for i := 1; i <= 3; i++ {
		kc.requireNoLostDBError(i)
	}
	kc.pod(1, "p1") // the ring exists before h4 joins
	samples := map[string][]time.Duration{}
	for run := range faultRuns(t) {
		for _, kind := range []string{"SIGKILL", "silent"} {
			kc.freshJoin(4)
			kc.pod(4, fmt.Sprintf("v%d%s", run, strings.ToLower(kind)))
			dead := kc.peerOf("h4")
			start := time.Now()
			if kind == "SIGKILL" {
				kc.kill9(4)
			} else {
				kc.cutOff(4, true)
			}
			kc.srv.DeleteNode(t, "h4")
			measureFor(t, 60*time.Second, "peer "+dead+" to leave the peer list", func() error {
				list, err := kube.Peers(kc.configMap())
				if err != nil || list.Contains(dead) {
					return fmt.Errorf("peer list %+v (%v)", list, err)
				}
				return nil
			})
			d := time.Since(start)
			samples[kind] = append(samples[kind], d)
			t.Logf("run %d %s: h4 (%s) reclaimed %v after the fault and Node delete", run+1, kind, dead, d.Round(time.Millisecond))
			kc.waitReclaimed(dead, 1, 2, 3)
			if kind == "silent" {
				kc.kill9(4)
				kc.cutOff(4, false)
			}
		}
	}
	var all []time.Duration
	for _, kind := range []string{"SIGKILL", "silent"} {
		p50, _ := logFigures(t, "Node delete -> reclaimed after "+kind, samples[kind])
		if p50 > reclaimP50 {
			t.Errorf("reclaim after %s too slow: p50 %v (target %v); samples %v", kind, p50, reclaimP50, samples[kind])
		}
		all = append(all, samples[kind]...)
	}
	logFigures(t, "Node delete -> reclaimed, all faults", all)
}

// freshJoin wipes host i's weave state (a new machine: a new peer name)
// and joins it as Node hN, waiting until it is part of the mesh.
func (kc *kubeCluster) freshJoin(i int) {
	kc.t.Helper()
	h := kc.tp.Host(i)
	entries, err := os.ReadDir(h.DataDir)
	if err != nil {
		kc.t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(h.DataDir, e.Name())); err != nil {
			kc.t.Fatal(err)
		}
	}
	kc.join(i)
	kc.waitPeers(i, "h1", "h2", "h3", h.Name)
	for j := 1; j <= 3; j++ {
		kc.waitPeers(j, "h1", "h2", "h3", h.Name)
	}
	kc.waitNetworkUp(h.Name)
	kc.requireNoLostDBError(i)
	// Liveness must know the new node before it dies: a node that dies
	// before any detector saw it alive is left to mesh's timeouts.
	for j := 1; j <= 3; j++ {
		kc.waitAlive(j, h.Name)
	}
}

// waitAlive waits until host i's `weave status peers` shows nick alive.
func (kc *kubeCluster) waitAlive(i int, nick string) {
	kc.t.Helper()
	h := kc.tp.Host(i)
	netnstest.WaitFor(kc.t, 30*time.Second, h.Name+" to see "+nick+" alive", func() error {
		out, err := kc.tp.Weave(h, "status", "peers")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "("+nick+")") && strings.Contains(l, "alive since") {
				return nil
			}
		}
		return fmt.Errorf("no %s alive in:\n%s", nick, out)
	})
}

// kill9 SIGKILLs every process of host i's namespace, weave-kube and the
// weaver it started, newest first (weaver before its parent: on its
// parent's death it would get SIGTERM and leave cleanly).
func (kc *kubeCluster) kill9(i int) {
	kc.t.Helper()
	pids, err := netnstest.Pids(kc.tp.Host(i).NS)
	if err != nil {
		kc.t.Fatal(err)
	}
	slices.Reverse(pids)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	netnstest.WaitFor(kc.t, 10*time.Second, fmt.Sprintf("h%d's weave-kube and weaver to die", i), func() error {
		for _, pid := range pids {
			if netnstest.PidAlive(pid) {
				return fmt.Errorf("pid %d alive", pid)
			}
		}
		return nil
	})
}

// cutOff drops (or stops dropping) every packet to and from host i
// except on loopback: the node vanishes without a reset.
func (kc *kubeCluster) cutOff(i int, cut bool) {
	kc.t.Helper()
	op := "-D"
	if cut {
		op = "-I"
	}
	ns := kc.tp.Host(i).NS
	for _, rule := range [][]string{{"INPUT", "!", "-i", "lo"}, {"OUTPUT", "!", "-o", "lo"}} {
		args := append(append([]string{"iptables", "-w", op}, rule...), "-j", "DROP")
		if err := netnstest.Exec(ns, args...); err != nil {
			kc.t.Fatalf("cut h%d off (%s): %v", i, op, err)
		}
	}
}

// logReclaimLines logs what the survivors said about liveness and reclaim
// (the failure dump of weave-kube keeps only the last lines).
func (kc *kubeCluster) logReclaimLines(hosts ...int) {
	for _, i := range hosts {
		var lines []string
		for _, l := range strings.Split(kc.procs[i].Stderr(), "\n") {
			if strings.Contains(l, "reclaim") || strings.Contains(l, "rmpeer") || strings.Contains(l, "liveness changed") ||
				strings.Contains(l, "declared dead") || strings.Contains(l, "Node") {
				lines = append(lines, l)
			}
		}
		kc.t.Logf("h%d, liveness and reclaim:\n%s", i, strings.Join(lines, "\n"))
	}
}

// requireNoLostDBError: a fresh node's first start (after weave-kube's
// `weaver --print-peer-name`) must not log the lost-database ERROR
// (issue 28 item 4: operators alert on ERROR lines).
func (kc *kubeCluster) requireNoLostDBError(i int) {
	kc.t.Helper()
	for _, l := range strings.Split(kc.procs[i].Stderr(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "IPAM database is missing") {
			kc.t.Errorf("fresh node h%d logged: %s", i, l)
		}
	}
}
