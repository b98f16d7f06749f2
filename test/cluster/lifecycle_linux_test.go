package cluster

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// routerReport is the part of a router's /report the tests read.
type routerReport struct {
	Router struct {
		Name  string
		Peers []struct{ Name, NickName string }
	}
	IPAM struct {
		Entries []struct {
			Token string
			Size  uint32
			Peer  string
		}
	}
}

func report(t *testing.T, n *Node) routerReport {
	t.Helper()
	var r routerReport
	err := netnstest.Poll(time.Minute, func() error {
		b, err := n.WeaveGet(ctxT(t, 15*time.Second), "/report")
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &r)
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pinger is a ping every 200 ms from one pod to another, running in the
// pod until stopped, and how many replies it lost.
type pinger struct {
	ns, pod  string
	from, to string
	sent     int
	lost     int
	err      error
}

var pingSummary = regexp.MustCompile(`(\d+) packets transmitted, (\d+) packets received`)

// startPingers starts one pinger per pod, to the next pod of the list.
func startPingers(t *testing.T, c *Cluster, ns string, pods []corev1.Pod) []*pinger {
	t.Helper()
	var ps []*pinger
	for i, p := range pods {
		ps = append(ps, startPing(t, c, ns, p, pods[(i+1)%len(pods)], "0.2"))
	}
	return ps
}

// startPing starts a ping every interval seconds from pod from to pod to,
// running in from until stopped.
func startPing(t *testing.T, c *Cluster, ns string, from, to corev1.Pod, interval string) *pinger {
	t.Helper()
	pg := &pinger{ns: ns, pod: from.Name, from: from.Spec.NodeName, to: to.Spec.NodeName}
	podSh(t, c, ns, from.Name, "ping -q -i "+interval+" -W 1 "+to.Status.PodIP+" >/tmp/ping.out 2>&1 & echo $! >/tmp/ping.pid")
	return pg
}

// awaitPingReplies waits until each pinger's ping gets replies: the
// counter of received packets its process keeps is not visible with -q,
// so it reads the pod's ICMP counter of echo replies twice.
func awaitPingReplies(t *testing.T, c *Cluster, ps []*pinger) {
	t.Helper()
	for _, pg := range ps {
		first := -1
		err := netnstest.Poll(time.Minute, func() error {
			out := podSh(t, c, pg.ns, pg.pod, `grep '^Icmp:' /proc/net/snmp | tail -1`)
			f := strings.Fields(out)
			// Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps ...
			if len(f) < 11 {
				return fmt.Errorf("ICMP counters of %s: %q", pg.pod, out)
			}
			var reps int
			if _, err := fmt.Sscan(f[10], &reps); err != nil {
				return err
			}
			if first < 0 {
				first = reps
			}
			if reps < first+5 {
				return fmt.Errorf("ping %s -> %s: no replies (%d, first %d)", pg.from, pg.to, reps, first)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// stop interrupts the ping (it prints its summary) and reads the loss.
func (pg *pinger) stop(t *testing.T, c *Cluster) {
	t.Helper()
	out := podSh(t, c, pg.ns, pg.pod, `kill -INT $(cat /tmp/ping.pid); for i in $(seq 20); do grep -q transmitted /tmp/ping.out && break; sleep 0.1; done; cat /tmp/ping.out`)
	m := pingSummary.FindStringSubmatch(out)
	if m == nil {
		pg.err = fmt.Errorf("ping %s -> %s: no summary: %s", pg.from, pg.to, out)
		return
	}
	tx, _ := strconv.Atoi(m[1])
	rx, _ := strconv.Atoi(m[2])
	pg.sent, pg.lost = tx, tx-rx
}

func podsByName(pods []corev1.Pod) map[string]corev1.Pod {
	m := map[string]corev1.Pod{}
	for _, p := range pods {
		m[p.Name] = p
	}
	return m
}

// TestRollingUpdate: a new image tag rolled out over the DaemonSet
// (maxUnavailable 1) while pods on every node ping each other: the pods
// keep their addresses, each router restarts on its bridge and state (same
// peer name), and the traffic lost is measured.
func TestRollingUpdate(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	const ns = "rolling"
	pods := echoPods(t, c, ns, 1)
	names := map[string]string{}
	for _, n := range c.Nodes {
		names[n.Name] = report(t, n).Router.Name
	}
	const newImage = "localhost/weave-kube:test-2"
	pingers := startPingers(t, c, ns, pods)
	awaitPingReplies(t, c, pingers) // traffic flowing before the update
	t0 := time.Now()
	if _, err := c.Kubectl(ctxT(t, time.Minute), nil, "-n", "kube-system", "set", "image", "daemonset/weave-net",
		"weave-init="+newImage, "weave="+newImage, "weave-npc="+newImage); err != nil {
		t.Fatal(err)
	}
	if err := waitDaemonSet(ctxT(t, 5*time.Minute), c, newImage); err != nil {
		t.Fatal(err)
	}
	t.Logf("rolled out %s on %d nodes in %v", newImage, len(c.Nodes), time.Since(t0).Round(100*time.Millisecond))
	awaitPingReplies(t, c, pingers) // and after it: every loss of the update is counted
	for _, pg := range pingers {
		pg.stop(t, c)
		if pg.err != nil {
			t.Error(pg.err)
			continue
		}
		t.Logf("ping %s -> %s during the update: %d of %d lost (%.1f s at 5/s)", pg.from, pg.to, pg.lost, pg.sent, float64(pg.lost)/5)
		// Two routers (ours and the peer's node) restart on the path: allow
		// a few seconds each, generously for a loaded CI machine (measured
		// here: 4.6-8 s for the pair).
		if pg.lost > 75 {
			t.Errorf("ping %s -> %s: %d of %d lost (over 15 s) during the rolling update", pg.from, pg.to, pg.lost, pg.sent)
		}
	}
	now := podsByName(readyPods(t, c, ns, "echo", 3, time.Minute))
	for _, p := range pods {
		q, ok := now[p.Name]
		if !ok || q.Status.PodIP != p.Status.PodIP {
			t.Errorf("pod %s on %s: address %s before the update, %s after", p.Name, p.Spec.NodeName, p.Status.PodIP, q.Status.PodIP)
		}
	}
	for _, n := range c.Nodes {
		if got := report(t, n).Router.Name; got != names[n.Name] {
			t.Errorf("%s: peer name %s after the update, %s before (state lost)", n.Name, got, names[n.Name])
		}
	}
	// The new routers run steadily (no container restarted since).
	wpods, err := client(t, c).CoreV1().Pods("kube-system").List(ctxT(t, 30*time.Second), metav1.ListOptions{LabelSelector: "name=weave-net"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range wpods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("%s on %s: container %s restarted %d times after the update (last: %+v)\n%s", p.Name, p.Spec.NodeName, cs.Name, cs.RestartCount, cs.LastTerminationState.Terminated, c.weaveLogs())
			}
		}
	}
	// And the pods still talk across nodes.
	for _, p := range pods {
		got := reachable(t, c, ns, p.Name, podIPs(pods), 8080)
		for ip, ok := range got {
			if !ok {
				t.Errorf("after the update, %s cannot reach %s", p.Name, ip)
			}
		}
	}
}

// weaverPid is the pid of the weaver process of node n.
func weaverPid(t *testing.T, n *Node) int {
	t.Helper()
	var pid int
	var cmds []string
	err := netnstest.Poll(time.Minute, func() error {
		pids, err := netnstest.Pids(n.NS)
		if err != nil {
			return err
		}
		cmds = nil
		for _, p := range pids {
			cmd, err := readCmdline(p)
			if err == nil && strings.HasPrefix(cmd, "/usr/bin/weaver ") {
				pid = p
				return nil
			}
			cmds = append(cmds, fmt.Sprintf("%d %.60s", p, cmd))
		}
		return fmt.Errorf("no weaver process among:\n%s", strings.Join(cmds, "\n"))
	})
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	return pid
}

// TestNodeRestart: a node whose kubelet and router are killed (SIGKILL)
// comes back when the kubelet restarts: the router restarts with its
// state, the pods there keep their addresses (the router still records
// them) and reach the other nodes again.
func TestNodeRestart(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	const ns = "restart"
	pods := echoPods(t, c, ns, 1)
	n := c.Nodes[1]
	name := report(t, n).Router.Name
	pid := weaverPid(t, n)
	n.kubelet.Kill()
	killPid(pid)
	t0 := time.Now()
	if err := n.startKubelet(); err != nil {
		t.Fatal(err)
	}
	if err := waitDaemonSet(ctxT(t, 3*time.Minute), c, currentWeaveImage(t, c)); err != nil {
		t.Fatal(err)
	}
	err := netnstest.Poll(2*time.Minute, func() error {
		if weaverPid(t, n) == pid {
			return fmt.Errorf("the old weaver still runs")
		}
		if got := report(t, n).Router.Name; got != name {
			return fmt.Errorf("peer name %s, was %s", got, name)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	t.Logf("%s: kubelet and router killed; router back with its peer name in %v", n.Name, time.Since(t0).Round(100*time.Millisecond))
	now := podsByName(readyPods(t, c, ns, "echo", 3, 2*time.Minute))
	b, err := n.WeaveGet(ctxT(t, 15*time.Second), "/ip")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if q := now[p.Name]; q.Status.PodIP != p.Status.PodIP {
			t.Errorf("pod %s: address %s, was %s", p.Name, q.Status.PodIP, p.Status.PodIP)
		}
		if p.Spec.NodeName == n.Name && !strings.Contains(string(b), p.Status.PodIP+"/") {
			t.Errorf("%s's router lost the address %s of its pod %s: %s", n.Name, p.Status.PodIP, p.Name, b)
		}
	}
	for _, p := range pods {
		err := netnstest.Poll(time.Minute, func() error {
			for ip, ok := range reachable(t, c, ns, p.Name, podIPs(pods), 8080) {
				if !ok {
					return fmt.Errorf("after the restart, %s on %s cannot reach %s", p.Name, p.Spec.NodeName, ip)
				}
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}

// currentWeaveImage is the image the DaemonSet runs now.
func currentWeaveImage(t *testing.T, c *Cluster) string {
	t.Helper()
	ds, err := client(t, c).AppsV1().DaemonSets("kube-system").Get(ctxT(t, 30*time.Second), "weave-net", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds.Spec.Template.Spec.Containers[0].Image
}

// TestDrainDeleteRejoin: `kubectl drain` and delete of a Node: the
// survivors reclaim its address space (it owns nothing in their rings);
// then its kubelet starts again, registers, and the node rejoins with a
// router of its own.
func TestDrainDeleteRejoin(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	n := c.Nodes[len(c.Nodes)-1]
	gone := report(t, n).Router.Name
	if _, err := c.Kubectl(ctxT(t, 3*time.Minute), nil, "drain", n.Name, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=2m"); err != nil {
		t.Fatal(err)
	}
	// The machine goes away: its kubelet and every pod process (the
	// router's too) stop.
	n.kubelet.Stop(10 * time.Second)
	n.kubeProxy.Stop(10 * time.Second)
	n.KillPods()
	if _, err := c.Kubectl(ctxT(t, time.Minute), nil, "delete", "node", n.Name); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for _, s := range c.Nodes[:len(c.Nodes)-1] {
		err := netnstest.Poll(2*time.Minute, func() error {
			for _, e := range report(t, s).IPAM.Entries {
				if e.Peer == gone && e.Size > 0 {
					return fmt.Errorf("%s: the deleted node's peer %s still owns %s (+%d)", s.Name, gone, e.Token, e.Size)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s deleted: its space reclaimed by the survivors in %v", n.Name, time.Since(t0).Round(100*time.Millisecond))
	// The machine comes back: its kubelet registers the Node again.
	if err := n.startKubelet(); err != nil {
		t.Fatal(err)
	}
	if err := n.startKubeProxy(); err != nil {
		t.Fatal(err)
	}
	if err := waitDaemonSet(ctxT(t, 4*time.Minute), c, currentWeaveImage(t, c)); err != nil {
		t.Fatal(err)
	}
	if got := report(t, n).Router.Name; got == "" {
		t.Errorf("%s: no router after rejoining", n.Name)
	}
	t.Logf("%s rejoined in %v", n.Name, time.Since(t0).Round(100*time.Millisecond))
}
