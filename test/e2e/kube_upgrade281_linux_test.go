//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/kube"
)

// TestKubeUpgradeFrom281KeepsPeersAndAddresses: two Nodes as Weave Net
// 2.8.1's DaemonSet leaves them when its pods are replaced (its data file
// in /weavedb, i.e. the data dir, as weave-netdata.db; its bridge,
// containers and iptables; the ConfigMap's peer list naming its peers)
// run our weave-kube. Each keeps 2.8.1's peer name, so it is still in
// kube-peers.weave.works/peers and nothing is reclaimed: both ring shares
// stay whole, the pods keep their addresses and ping across the Nodes,
// and a new pod gets an address no old pod has. Restarting one node's
// weave-kube (the rolling update's step) is measured with a ping from a
// pod on the other node. (A real kubelet's rolling update of the
// DaemonSet is the cluster harness's to show.)
func TestKubeUpgradeFrom281KeepsPeersAndAddresses(t *testing.T) {
	kc := newKubeCluster(t, 2)
	store := &kube.Store{Client: kc.srv.Admin(t).CoreV1()}
	conts := make([]map[string]string, 2)
	for i, n := range nodes281 {
		h := kc.tp.Host(i + 1)
		if err := store.AddPeer(context.Background(), n.peer, h.Name); err != nil {
			t.Fatal(err)
		}
		conts[i] = build281Host(t, h, n)
	}
	kc.join(1)
	kc.join(2)
	kc.waitPeers(1, "h1", "h2")
	kc.waitPeers(2, "h1", "h2")
	kc.waitNetworkUp("h1", "h2")
	for i, n := range nodes281 {
		if got := kc.peerOf(kc.tp.Host(i + 1).Name); got != n.peer {
			t.Errorf("h%d is %s in the peer list, want 2.8.1's %s", i+1, got, n.peer)
		}
	}
	if list, err := kube.Peers(kc.configMap()); err != nil || len(list.Peers) != 2 {
		t.Errorf("peer list %+v (%v), want the two 2.8.1 peers", list, err)
	}
	ic := &ipamCluster{t: t, tp: kc.tp}
	for i, n := range nodes281 {
		shares := parseIPAMStatus(ic.weave(i+1, "status", "ipam"))
		for _, m := range nodes281 {
			if s, ok := shareOf(shares, m.peer); !ok || s.ips != 524288 {
				t.Errorf("h%d: share of %s %+v, want 524288 (nothing reclaimed)", i+1, m.peer, shares)
			}
		}
		for _, c := range n.containers {
			if code, body, err := ic.routerGET(i+1, "/ip/"+c.id); err != nil || body != c.cidr {
				t.Errorf("h%d GET /ip/%s: %d %q %v; want %s", i+1, c.id, code, body, err, c.cidr)
			}
		}
		stderr := kc.procs[i+1].Stderr()
		if strings.Contains(stderr, "rmpeer") || strings.Contains(stderr, "removing the persisted IPAM data") {
			t.Errorf("h%d reclaimed or dropped state:\n%s", i+1, netnstest.Tail(stderr, 40))
		}
		if !strings.Contains(stderr, "adopting Weave Net 2.8.1's data file") {
			t.Errorf("h%d did not say it adopted 2.8.1's file:\n%s", i+1, netnstest.Tail(stderr, 40))
		}
	}
	waitPingIP(t, conts[0]["c1a"], "old pod c1a on h1 to ping old pod c2b on h2", "10.40.0.1")
	ns, ip := kc.pod(1, "p1")
	for _, n := range nodes281 {
		for _, c := range n.containers {
			if strings.HasPrefix(c.cidr, ip+"/") {
				t.Fatalf("new pod got %s, %s's address", ip, c.id)
			}
		}
	}
	waitPingIP(t, ns, "new pod on h1 to ping old pod c2c on h2", "10.40.0.100")

	// A node's switch as the DaemonSet's rolling update does it: weave-kube
	// (and its weaver) stops and a new one starts on the same host state,
	// with a pod on h2 pinging a pod on h1 every 10 ms throughout.
	flood := pingFlood(kc.tp, conts[1]["c2a"], "10.32.0.1", 3000)
	netnstest.WaitFor(t, 10*time.Second, "the flood to flow", func() error {
		if netnstest.SNMPCounter(t, conts[1]["c2a"], "Icmp", "InEchoReps") < 50 {
			return fmt.Errorf("fewer than 50 replies")
		}
		return nil
	})
	kc.stop(1)
	kc.start(1)
	sent, n := lost(t, flood, "across weave-kube's restart")
	t.Logf("weave-kube restart on h1: %d of %d echo requests from a pod on h2 to a pod on h1 lost (10 ms apart: ~%d ms)", n, sent, n*10)
	if n > 1000 {
		t.Errorf("lost %d packets (%d s) across the restart", n, n/100)
	}
	if got := kc.peerOf("h1"); got != nodes281[0].peer {
		t.Errorf("after the restart h1 is %s in the peer list", got)
	}
	if code, body, err := ic.routerGET(1, "/ip/c1a"); err != nil || body != "10.32.0.1/12" {
		t.Errorf("after the restart GET /ip/c1a: %d %q %v", code, body, err)
	}
}
