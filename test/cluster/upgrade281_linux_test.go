package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bolt "go.etcd.io/bbolt"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/kube"
)

// Where Weave Net 2.8.1's DaemonSet and ours keep state on a node (host
// /var/lib/weave, /weavedb in the pod): 2.8.1's data file and ours.
const (
	file281  = "weave-netdata.db"
	fileOurs = "weavedata.db"
)

// TestUpgradeFrom281KeepsPodAddresses: a node of the real cluster switches
// to our router from a node whose /weavedb holds Weave Net 2.8.1's data file
// and nothing else, as 2.8.1's DaemonSet leaves it when the rolling update
// replaces its pod; the node's pods keep running and keep their addresses.
//
// What stands in for 2.8.1 (no 2.8.1 binary or image can be had here):
// the node first runs our DaemonSet, which creates the bridge, the pods'
// veths and their addresses; then our DaemonSet is deleted with its pods
// orphaned and our pod on the node is deleted (the rolling update's step
// that stops the old pod; the other nodes' routers run on, untouched), and
// the node's /var/lib/weave is rewritten to hold what 2.8.1 keeps there:
// only weave-netdata.db, in 2.8.1's layout (bucket "top", version {1,0},
// peername, ring, ownedAddresses; package ipam's writer, whose format
// ipam's tests check against the data files of two real 2.8.1 routers),
// holding the state our router had on that node: its peer name, the ring
// and the addresses of the node's pods. Our own files (weavedata.db,
// peername, targets) are removed, so nothing of ours is left to start
// from. 2.8.1's iptables chains and bridge types are not on the node (the
// namespace tests TestUpgradeFrom281InPlace and
// TestKubeUpgradeFrom281KeepsPeersAndAddresses in test/e2e lay those out
// from 2.8.1's own rules). Then the DaemonSet is applied again and its
// controller starts our pod on the node.
//
// It asserts: the new router adopts the file in place (its log says so,
// no weavedata.db appears) under the same peer name, which the
// kube-peers.weave.works/peers list still names, unchanged, with the node's
// ring share unchanged on the other routers (nothing reclaimed); the other
// nodes' weave-net pods were not restarted; the node's pods keep their
// addresses, its router owns them, and they reach the pods on other nodes
// by ping and TCP; a new pod on the node gets an address no other pod has;
// and the 2.8.1-format file, read as 2.8.1 reads it, records the new pod's
// address (so a rollback would not hand it out again). Pings every 100 ms
// across the switch (a pod on the node to one on another node, the reverse,
// and between two pods of the node) measure what it costs.
func TestUpgradeFrom281KeepsPodAddresses(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	const ns = "upgrade281"
	own := time.Now() // the test's own time, on top of the shared cluster and DaemonSet
	pods := echoPods(t, c, ns, 2)
	n := c.Nodes[0]
	img := currentWeaveImage(t, c)
	name := report(t, n).Router.Name
	witness := c.Nodes[1] // another router, whose ring view shows our share
	share := ringShare(report(t, witness), name)
	if share == "" {
		t.Fatalf("%s's router shows no ring share of %s (%s)", witness.Name, name, n.Name)
	}
	peersBefore := peerList(t, c)
	if !peersBefore.Contains(name) {
		t.Fatalf("peer list %+v does not name %s (%s)", peersBefore, name, n.Name)
	}
	others := weavePods(t, c)
	old, ok := others[n.Name]
	if !ok {
		t.Fatalf("no weave-net pod on %s", n.Name)
	}
	delete(others, n.Name)

	var onNode, offNode []corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == n.Name {
			onNode = append(onNode, p)
		} else {
			offNode = append(offNode, p)
		}
	}
	if len(onNode) != 2 || len(offNode) < 2 {
		t.Fatalf("pods on %s: %d, elsewhere %d; want 2 and at least 2", n.Name, len(onNode), len(offNode))
	}
	// Whatever happens, leave the package's cluster with its DaemonSet.
	t.Cleanup(func() { restoreDaemonSet(t, c, img) })

	pingers := []*pinger{
		startPing(t, c, ns, onNode[0], offNode[0], "0.1"),
		startPing(t, c, ns, offNode[len(offNode)-1], onNode[1], "0.1"),
		startPing(t, c, ns, onNode[1], onNode[0], "0.1"),
	}
	awaitPingReplies(t, c, pingers)

	// The rolling update's step on n: the old pod goes (here with its
	// DaemonSet, orphaning the others' pods so they keep running)...
	t0 := time.Now()
	if _, err := c.Kubectl(ctxT(t, 2*time.Minute), nil, "-n", "kube-system", "delete", "daemonset", "weave-net", "--cascade=orphan", "--wait=true"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctxT(t, 2*time.Minute), nil, "-n", "kube-system", "delete", "pod", old.Name, "--wait=true"); err != nil {
		t.Fatal(err)
	}
	awaitNoWeaver(t, n)
	stopped := time.Since(t0)
	// ...leaving 2.8.1's state on disk...
	removed := seed281(t, n.HostPath("/var/lib/weave"))
	t.Logf("%s: our pod gone %v after the delete; /var/lib/weave now holds only %s (removed %v)", n.Name, stopped.Round(100*time.Millisecond), file281, removed)
	// ...and the new pod starts on it.
	if _, err := c.Kubectl(ctxT(t, time.Minute), manifest(t, img), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if err := waitDaemonSet(ctxT(t, 3*time.Minute), c, img); err != nil {
		t.Fatal(err)
	}
	ready := time.Since(t0)
	awaitPingReplies(t, c, pingers)
	resumed := time.Since(t0)
	for _, pg := range pingers {
		pg.stop(t, c)
		if pg.err != nil {
			t.Error(pg.err)
			continue
		}
		t.Logf("ping %s -> %s every 100 ms across the switch: %d of %d lost (%.1f s)", pg.from, pg.to, pg.lost, pg.sent, float64(pg.lost)/10)
	}
	t.Logf("%s switched: DaemonSet ready again %v after the delete, pings answered again after %v",
		n.Name, ready.Round(100*time.Millisecond), resumed.Round(100*time.Millisecond))
	for _, pg := range pingers {
		// Generous for a loaded CI machine: across nodes the whole switch
		// (pod stopped, re-created, router up, mesh reconnected) cost about
		// 4 s here; between the node's own pods (the bridge and veths stay,
		// no router on the path) nothing.
		limit := 200 // 20 s
		if pg.from == pg.to {
			limit = 10
		}
		if pg.err == nil && pg.lost > limit {
			t.Errorf("ping %s -> %s: %d of %d lost across the switch (limit %d)", pg.from, pg.to, pg.lost, pg.sent, limit)
		}
	}

	// The same peer, adopting 2.8.1's file in place; nothing reclaimed.
	if got := report(t, n).Router.Name; got != name {
		t.Errorf("%s: peer name %s after the switch, %s before", n.Name, got, name)
	}
	now := weavePods(t, c)
	logs, err := c.Kubectl(ctxT(t, time.Minute), nil, "-n", "kube-system", "logs", now[n.Name].Name, "-c", "weave")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "adopting Weave Net 2.8.1's data file") || !strings.Contains(logs, "/weavedb/"+file281) {
		t.Errorf("%s: the new router did not say it adopted /weavedb/%s:\n%s", n.Name, file281, netnstest.Tail(logs, 30))
	}
	if strings.Contains(logs, "removing the persisted IPAM data") {
		t.Errorf("%s: the new pod dropped the data file:\n%s", n.Name, netnstest.Tail(logs, 30))
	}
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "adopting Weave Net 2.8.1") {
			t.Logf("%s: %s", n.Name, strings.TrimSpace(l))
		}
	}
	if _, err := os.Stat(filepath.Join(n.HostPath("/var/lib/weave"), fileOurs)); err == nil {
		t.Errorf("%s: the router made its own %s instead of keeping 2.8.1's file current", n.Name, fileOurs)
	}
	if got := peerList(t, c); !slices.Equal(got.Peers, peersBefore.Peers) {
		t.Errorf("peer list %+v after the switch, %+v before", got.Peers, peersBefore.Peers)
	}
	if got := ringShare(report(t, witness), name); got != share {
		t.Errorf("%s's ring share of %s: %s after the switch, %s before", witness.Name, name, got, share)
	}
	for node, p := range others {
		q, ok := now[node]
		if !ok || q.UID != p.UID || restarts(q) != restarts(p) {
			t.Errorf("%s's weave-net pod %s (restarts %d) is now %s (restarts %d): the switch touched another node", node, p.Name, restarts(p), q.Name, restarts(q))
		}
	}

	// The node's pods keep their addresses, its router owns them, and they
	// reach the other nodes' pods.
	after := podsByName(readyPods(t, c, ns, "echo", len(pods), time.Minute))
	for _, p := range pods {
		if q := after[p.Name]; q.UID != p.UID || q.Status.PodIP != p.Status.PodIP {
			t.Errorf("pod %s on %s: %s (uid %s) before the switch, %s (uid %s) after", p.Name, p.Spec.NodeName, p.Status.PodIP, p.UID, q.Status.PodIP, q.UID)
		}
	}
	owned, err := n.WeaveGet(ctxT(t, 15*time.Second), "/ip")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range onNode {
		if !strings.Contains(string(owned), `"`+p.Status.PodIP+"/") {
			t.Errorf("%s's router does not own %s (pod %s) after the switch: %s", n.Name, p.Status.PodIP, p.Name, owned)
		}
	}
	for _, p := range onNode {
		awaitPingTCP(t, c, ns, p, offNode)
	}
	t.Logf("%s's %d pods kept their addresses and reach the %d pods on the other nodes by ping and TCP", n.Name, len(onNode), len(offNode))

	// A new pod on the node: an address no other pod has, reaching the others.
	apply(t, c, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: fresh, namespace: %s, labels: {app: fresh}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: echo
    image: %s
    imagePullPolicy: Never
    command: [/bin/echo-server, -port, "8080"]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
`, ns, n.Name, BoxImage))
	fresh := readyPods(t, c, ns, "fresh", 1, 2*time.Minute)[0]
	all, err := client(t, c).CoreV1().Pods("").List(ctxT(t, 30*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all.Items {
		if !p.Spec.HostNetwork && p.UID != fresh.UID && p.Status.PodIP == fresh.Status.PodIP {
			t.Errorf("new pod on %s got %s, the address of pod %s/%s on %s", n.Name, fresh.Status.PodIP, p.Namespace, p.Name, p.Spec.NodeName)
		}
	}
	awaitPingTCP(t, c, ns, fresh, offNode)
	t.Logf("new pod on %s: %s, no other pod's, reaches the other nodes' pods", n.Name, fresh.Status.PodIP)

	// Rollback: the file 2.8.1 would reopen records every address of the
	// node's pods, the new one's too.
	want := []string{fresh.Status.PodIP}
	for _, p := range onNode {
		want = append(want, p.Status.PodIP)
	}
	err = netnstest.Poll(30*time.Second, func() error {
		addrs, err := read281Addresses(t, filepath.Join(n.HostPath("/var/lib/weave"), file281), name)
		if err != nil {
			return err
		}
		for _, ip := range want {
			if !addrs[ip] {
				return fmt.Errorf("%s's %s does not record %s (has %v)", n.Name, file281, ip, addrs)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	t.Logf("the test's own time (pods, switch, checks): %v", time.Since(own).Round(100*time.Millisecond))
}

// awaitPingTCP waits until pod from reaches every pod of to by ping and by
// TCP (the echo server naming itself and seeing from's own address).
func awaitPingTCP(t *testing.T, c *Cluster, ns string, from corev1.Pod, to []corev1.Pod) {
	t.Helper()
	err := netnstest.Poll(time.Minute, func() error {
		for _, p := range to {
			out := podSh(t, c, ns, from.Name, fmt.Sprintf(`if ping -c 1 -W 3 %[1]s >/dev/null 2>&1; then echo ping=ok; else echo ping=fail; fi; nc -w 3 %[1]s 8080 </dev/null; true`, p.Status.PodIP))
			want := fmt.Sprintf("ping=ok\n%s %s:", p.Name, from.Status.PodIP)
			if !strings.HasPrefix(out, want) {
				return fmt.Errorf("%s (%s, %s) to %s (%s, %s): %q, want %q...", from.Name, from.Spec.NodeName, from.Status.PodIP, p.Name, p.Spec.NodeName, p.Status.PodIP, out, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// awaitNoWeaver waits until no weaver runs on node n (the data file is
// closed).
func awaitNoWeaver(t *testing.T, n *Node) {
	t.Helper()
	err := netnstest.Poll(time.Minute, func() error {
		pids, err := netnstest.Pids(n.NS)
		if err != nil {
			return err
		}
		for _, p := range pids {
			if cmd, err := readCmdline(p); err == nil && strings.HasPrefix(cmd, "/usr/bin/weaver ") {
				return fmt.Errorf("weaver %d still runs", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
}

// seed281 leaves in dir, a node's /var/lib/weave, what Weave Net 2.8.1's
// DaemonSet keeps there and nothing else: weave-netdata.db in 2.8.1's
// layout, written by package ipam's writer from the IPAM state our router
// had (our weavedata.db, or, when the node already runs on an adopted
// 2.8.1 file, that file as it is). It returns the files it removed.
func seed281(t *testing.T, dir string) []string {
	t.Helper()
	ours, legacy := filepath.Join(dir, fileOurs), filepath.Join(dir, file281)
	if _, err := os.Stat(ours); err == nil {
		s, err := ipam.OpenBoltStore(ours)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Load()
		_ = s.Close()
		if err != nil || p == nil || p.Ring == nil || len(p.Tentative) > 0 {
			t.Fatalf("%s: %+v, %v: want a peer with a ring and no pending takeover", ours, p, err)
		}
		tmp := legacy + ".tmp"
		_ = os.Remove(tmp)
		w, err := ipam.OpenBoltStore(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Save(p); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// Our writer adds a key of its own only for pending takeovers
		// (none here): 2.8.1's file has only its own keys.
		if keys := boltKeys(t, tmp); !slices.Equal(keys, []string{"ownedAddresses", "peername", "ring", "version"}) {
			t.Fatalf("%s: keys %v, want 2.8.1's only", tmp, keys)
		}
		if err := os.Rename(tmp, legacy); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(ours); err != nil {
			t.Fatal(err)
		}
	} else if _, err := os.Stat(legacy); err != nil {
		t.Fatalf("%s: neither %s nor %s: no IPAM state to switch from", dir, fileOurs, file281)
	}
	if _, err := ipam.ReadWeaveDataFile(legacy); err != nil {
		t.Fatal(err)
	}
	// The rest is ours (peername, the persisted dial targets): 2.8.1 keeps
	// neither (its direct peers are in the data file).
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, e := range ents {
		if e.Name() != file281 {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
			removed = append(removed, e.Name())
		}
	}
	return removed
}

// boltKeys is the keys of the "top" bucket of the BoltDB file at path, sorted.
func boltKeys(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys []string
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("top"))
		if b == nil {
			return fmt.Errorf("no bucket top")
		}
		return b.ForEach(func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return keys
}

// read281Addresses reads a copy of the 2.8.1-format data file at path
// (the running router holds the file's lock) and returns the addresses it
// records, checking it belongs to peer.
func read281Addresses(t *testing.T, path, peer string) (map[string]bool, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cp := filepath.Join(t.TempDir(), file281)
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		return nil, err
	}
	p, err := ipam.ReadWeaveDataFile(cp)
	if err != nil {
		return nil, err
	}
	if p.PeerName.String() != peer {
		return nil, fmt.Errorf("%s: peer %s, want %s", path, p.PeerName, peer)
	}
	addrs := map[string]bool{}
	for _, a := range p.Summarize().Addresses {
		addrs[a.Addr.String()] = true
	}
	return addrs, nil
}

// ringShare is the ring entries (token+size) r shows for peer, as a string.
func ringShare(r routerReport, peer string) string {
	var es []string
	for _, e := range r.IPAM.Entries {
		if e.Peer == peer {
			es = append(es, fmt.Sprintf("%s+%d", e.Token, e.Size))
		}
	}
	slices.Sort(es)
	return strings.Join(es, " ")
}

// peerList is the kube-peers.weave.works/peers list of the weave-net
// ConfigMap.
func peerList(t *testing.T, c *Cluster) kube.PeerList {
	t.Helper()
	cm, err := client(t, c).CoreV1().ConfigMaps(kube.ConfigMapNamespace).Get(ctxT(t, 30*time.Second), kube.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := kube.Peers(cm)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// weavePods are the live weave-net pods by node.
func weavePods(t *testing.T, c *Cluster) map[string]corev1.Pod {
	t.Helper()
	pods, err := client(t, c).CoreV1().Pods("kube-system").List(ctxT(t, 30*time.Second), metav1.ListOptions{LabelSelector: "name=weave-net"})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			m[p.Spec.NodeName] = p
		}
	}
	return m
}

func restarts(p corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// restoreDaemonSet re-creates the weave-net DaemonSet with image img when
// a failed test left it deleted, and waits for it to be ready.
func restoreDaemonSet(t *testing.T, c *Cluster, img string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl, err := c.Client()
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := cl.AppsV1().DaemonSets("kube-system").Get(ctx, "weave-net", metav1.GetOptions{}); err == nil {
		return
	}
	if _, err := c.Kubectl(ctx, manifest(t, img), "apply", "-f", "-"); err != nil {
		t.Errorf("restore the DaemonSet: %v", err)
		return
	}
	if err := waitDaemonSet(ctx, c, img); err != nil {
		t.Errorf("restore the DaemonSet: %v", err)
	}
}
