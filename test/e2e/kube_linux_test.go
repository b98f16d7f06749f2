//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/kube"
	"github.com/seedf75a49c6/weave/test/k8s"
)

// apiAddr is the API server's address on the underlay bridge (in the
// underlay namespace), which every namespace host reaches over eth0.
const apiAddr = netnstest.UnderlaySubnet + ".254"

// kubeCluster is namespace hosts registered as Nodes of a real API server,
// each running weave-kube with the DaemonSet ServiceAccount's token.
type kubeCluster struct {
	t          *testing.T
	tp         *netnstest.Topology
	srv        *k8s.Server
	kubeconfig string // the weave-net ServiceAccount's
	cni        map[int]cniHost
	procs      map[int]*netnstest.Proc
	// rmpeers counts the "rmpeer done" lines already seen per peer name: a
	// host that rejoins with fresh data keeps its name (derived from its
	// machine id, as 2.8.1's), so a later reclaim of it adds to the count.
	rmpeers map[string]int
}

func newKubeCluster(t *testing.T, hosts int) *kubeCluster {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "iptables", "ping", "nsenter")
	if build.err != nil {
		t.Fatalf("TestMain could not build the product: %v", build.err)
	}
	kc := &kubeCluster{t: t, cni: map[int]cniHost{}, procs: map[int]*netnstest.Proc{}, rmpeers: map[string]int{}}
	kc.tp = netnstest.New(t, netnstest.Config{Hosts: hosts, Weave: build.weave})
	if out, err := netnstest.Output(kc.tp.Underlay, "ip", "addr", "add", apiAddr+"/24", "dev", "br0"); err != nil {
		t.Fatalf("address the underlay bridge: %v: %s", err, out)
	}
	kc.srv = k8s.StartWithOptions(t, k8s.Options{NetNS: kc.tp.Underlay, Address: apiAddr})
	t.Cleanup(kc.stopAll) // before the API server stops: open watches slow its exit
	admin := kc.srv.WriteKubeconfig(t, kc.srv.AdminConfig())
	root, err := netnstest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(root, "prog", "weave-kube", "weave-daemonset-k8s.yaml")
	if out, err := kc.srv.Kubectl(t, admin, "apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply the manifest: %v\n%s", err, out)
	}
	kc.kubeconfig = kc.srv.WriteKubeconfig(t, kc.srv.ServiceAccountConfig(t, "kube-system", "weave-net"))
	return kc
}

// join registers host i as Node hN and runs weave-kube init and weave-kube
// on it, as the DaemonSet's two containers would.
func (kc *kubeCluster) join(i int) {
	kc.t.Helper()
	h := kc.tp.Host(i)
	kc.srv.CreateNode(kc.t, h.Name, h.IP)
	base := kc.t.TempDir()
	ch := cniHost{h: h, binDir: filepath.Join(base, "bin"), confDir: filepath.Join(base, "net.d"), dataDir: filepath.Join(base, "cni")}
	kc.cni[i] = ch
	env := kc.agentEnv(h)
	if out, err := ch.inHost(env, weaveKubeBin(), "init", "--cni-bin-dir="+ch.binDir, "--cni-conf-dir="+ch.confDir); err != nil {
		kc.t.Fatalf("weave-kube init on %s: %v\n%s", h.Name, err, out)
	}
	kc.start(i)
}

func weaveKubeBin() string { return filepath.Join(filepath.Dir(build.weave), "bin", "weave-kube") }

// agentEnv is weave-kube's environment on host h.
func (kc *kubeCluster) agentEnv(h *netnstest.Host) []string {
	return append(kc.tp.WeaveEnv(h), "HOSTNAME="+h.Name, "KUBECONFIG="+kc.kubeconfig, "EXPECT_NPC=0",
		"WEAVE_KUBE_RECLAIM_DELAY=0s", "WEAVE_NO_FASTDP=1", "WEAVE_METRICS_ADDR=127.0.0.1:6782")
}

// start runs weave-kube (the DaemonSet's container weave) on host i.
func (kc *kubeCluster) start(i int) {
	h := kc.tp.Host(i)
	kc.procs[i] = kc.tp.Start(h.NS, append(append([]string{"env"}, kc.agentEnv(h)...), weaveKubeBin())...)
}

// stop ends host i's weave-kube (and so its weaver), as when a node dies.
func (kc *kubeCluster) stop(i int) {
	if p := kc.procs[i]; p != nil {
		_ = p.Stop(syscall.SIGTERM)
	}
}

func (kc *kubeCluster) stopAll() {
	for i, p := range kc.procs {
		kc.stop(i)
		if kc.t.Failed() {
			kc.t.Logf("weave-kube on h%d:\n%s", i, netnstest.Tail(p.Stderr(), 40))
		}
	}
}

// waitPeers waits until host i's router lists exactly the nicknames.
func (kc *kubeCluster) waitPeers(i int, nicks ...string) {
	kc.t.Helper()
	h := kc.tp.Host(i)
	netnstest.WaitFor(kc.t, 60*time.Second, fmt.Sprintf("%s to list peers %v", h.Name, nicks), func() error {
		out, err := kc.tp.Weave(h, "status", "peers")
		if err != nil {
			return err
		}
		for _, n := range nicks {
			if !strings.Contains(out, "("+n+")") {
				return fmt.Errorf("no %s in:\n%s", n, out)
			}
		}
		if got := strings.Count(out, "("); got < len(nicks) {
			return fmt.Errorf("%d peers listed:\n%s", got, out)
		}
		return nil
	})
}

// pod attaches a new namespace on host i through the installed CNI plugin
// and returns its namespace name and address.
func (kc *kubeCluster) pod(i int, name string) (ns, ip string) {
	kc.t.Helper()
	ch := kc.cni[i]
	c := kc.tp.NewContainer(ch.h, name, "")
	path := netnstest.NSPath(c.NS)
	kc.t.Cleanup(func() { _ = os.Remove(filepath.Join(cniResultsDir, "weave-"+cnitoolID(path)+"-eth0")) })
	out, err := ch.inHost(ch.env(), cniTool(kc.t), "add", "weave", path)
	if err != nil {
		kc.t.Fatal(err)
	}
	return c.NS, resultIP(kc.t, out)
}

func (kc *kubeCluster) configMap() *corev1.ConfigMap {
	kc.t.Helper()
	cm, err := kc.srv.Admin(kc.t).CoreV1().ConfigMaps("kube-system").Get(context.Background(), "weave-net", metav1.GetOptions{})
	if err != nil {
		kc.t.Fatalf("get ConfigMap weave-net: %v", err)
	}
	return cm
}

// peerOf is the peer name the peer list records for node.
func (kc *kubeCluster) peerOf(node string) string {
	kc.t.Helper()
	list, err := kube.Peers(kc.configMap())
	if err != nil {
		kc.t.Fatal(err)
	}
	for _, p := range list.Peers {
		if p.NodeName == node {
			return p.PeerName
		}
	}
	kc.t.Fatalf("node %s not in the peer list %+v", node, list)
	return ""
}

// TestKubeMeshFromNodesReclaimAndJoin: three namespace hosts registered as
// Nodes run weave-kube with the ServiceAccount of the manifest: they form
// the mesh from the Node list alone (no peers given), mark their Nodes'
// network up, and pods attached through the installed CNI plugin ping each
// other across hosts. A fourth Node added later is connected by the
// others. When h3 dies and its Node is deleted, the three survivors race
// to reclaim its space: exactly one rmpeer runs, the dead peer owns no
// addresses afterwards, and the shares still add up to the whole range.
func TestKubeMeshFromNodesReclaimAndJoin(t *testing.T) {
	kc := newKubeCluster(t, 4)
	for i := 1; i <= 3; i++ {
		kc.join(i)
	}
	for i := 1; i <= 3; i++ {
		kc.waitPeers(i, "h1", "h2", "h3")
	}
	kc.waitNetworkUp("h1", "h2", "h3")
	ns1, _ := kc.pod(1, "p1")
	_, ip2 := kc.pod(2, "p2")
	ns3, ip3 := kc.pod(3, "p3")
	waitPingIP(t, ns1, "p1 on h1 to ping p2 on h2", ip2)
	waitPingIP(t, ns1, "p1 on h1 to ping p3 on h3", ip3)

	kc.join(4) // a new Node: the others must dial it because the Node appeared
	kc.waitTarget(1, kc.tp.Host(4).IP)
	kc.waitPeers(4, "h1", "h2", "h3", "h4")
	_, ip4 := kc.pod(4, "p4")
	waitPingIP(t, ns3, "p3 on h3 to ping p4 on h4", ip4)

	dead := kc.peerOf("h3")
	kc.stop(3)
	kc.srv.DeleteNode(t, "h3")
	kc.waitReclaimed(dead, 1, 2, 4)
	waitPingIP(t, ns1, "p1 on h1 to still ping p4 on h4", ip4)
}

// waitNetworkUp waits for NetworkUnavailable=False (WeaveIsUp) on nodes.
func (kc *kubeCluster) waitNetworkUp(nodes ...string) {
	kc.t.Helper()
	for _, name := range nodes {
		netnstest.WaitFor(kc.t, 30*time.Second, "Node "+name+" NetworkUnavailable=False", func() error {
			n, err := kc.srv.Admin(kc.t).CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse && c.Reason == kube.NetworkUpReason {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", n.Status.Conditions)
		})
	}
}

// waitTarget waits until host i's router has addr among its targets.
func (kc *kubeCluster) waitTarget(i int, addr string) {
	kc.t.Helper()
	h := kc.tp.Host(i)
	netnstest.WaitFor(kc.t, 30*time.Second, h.Name+" to target "+addr, func() error {
		out, err := kc.tp.Weave(h, "status", "targets")
		if err != nil || !strings.Contains(out, addr) {
			return fmt.Errorf("targets %q (%v)", out, err)
		}
		return nil
	})
}

// waitReclaimed waits until the dead peer has left the peer list, then
// checks that exactly one survivor ran rmpeer for it, that no survivor's
// ring gives it addresses, and that the shares cover the range once.
func (kc *kubeCluster) waitReclaimed(dead string, survivors ...int) {
	kc.t.Helper()
	netnstest.WaitFor(kc.t, 60*time.Second, "peer "+dead+" to leave the peer list", func() error {
		list, err := kube.Peers(kc.configMap())
		if err != nil || list.Contains(dead) {
			return fmt.Errorf("peer list %+v (%v)", list, err)
		}
		return nil
	})
	rmpeers := 0
	for _, i := range survivors {
		for _, line := range strings.Split(kc.procs[i].Stderr(), "\n") {
			if strings.Contains(line, `msg="rmpeer done"`) && strings.Contains(line, " peer="+dead+" ") {
				rmpeers++
			}
		}
	}
	if n := rmpeers - kc.rmpeers[dead]; n != 1 {
		kc.t.Fatalf("%d rmpeer calls for %s across the survivors, want exactly 1", n, dead)
	}
	kc.rmpeers[dead] = rmpeers
	for _, i := range survivors {
		h := kc.tp.Host(i)
		netnstest.WaitFor(kc.t, 30*time.Second, h.Name+"'s ring without "+dead, func() error {
			out, err := kc.tp.Weave(h, "status", "ipam")
			if err != nil {
				return err
			}
			shares := parseIPAMStatus(out)
			total := 0
			for _, s := range shares {
				total += s.ips
			}
			if s, ok := shareOf(shares, dead); ok && s.ips > 0 {
				return fmt.Errorf("dead peer still owns %d IPs:\n%s", s.ips, out)
			}
			if total != 1<<20 {
				return fmt.Errorf("shares add up to %d IPs, want %d (10.32.0.0/12 once):\n%s", total, 1<<20, out)
			}
			return nil
		})
	}
}
