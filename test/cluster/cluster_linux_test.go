package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/seedf75a49c6/weave/internal/image"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// One cluster for the package (starting one costs ~10 s and a node ~250 MB):
// the first test that needs it starts it, TestMain stops it and fails the
// run when anything is left on the machine.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
	dir  string // images built for the tests

	archiveOnce sync.Once
	archive     string
	archiveErr  error

	weaveOnce sync.Once
	weaveErr  error
	applied   time.Duration // kubectl apply -> DaemonSet ready everywhere
}

// weaveImage is the image name the tests substitute into the manifest.
const weaveImage = "localhost/weave-kube:test-1"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weave-cluster-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	shared.dir = dir
	code := m.Run()
	if c := shared.c; c != nil {
		t0 := time.Now()
		c.Stop()
		fmt.Printf("cluster: torn down in %v\n", time.Since(t0).Round(time.Millisecond))
		if left := c.Leftovers(); len(left) > 0 {
			fmt.Printf("FAIL: the cluster left on the machine:\n  %s\n", strings.Join(left, "\n  "))
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// cluster is the package's cluster, started on first use.
func cluster(t *testing.T) *Cluster {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, RequiredTools...)
	shared.once.Do(func() {
		backend := os.Getenv("WEAVE_CLUSTER_IPTABLES")
		t0 := time.Now()
		shared.c, shared.err = Start(Options{Nodes: 3, IPTables: backend, Logf: t.Logf})
		if shared.err == nil {
			t.Logf("cluster: 3 nodes (iptables %s) up in %v", shared.c.Opts.IPTables, time.Since(t0).Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatalf("start the cluster: %v", shared.err)
	}
	c := shared.c
	t.Cleanup(func() {
		if t.Failed() {
			// What the nodes' own programs said last: a failure's cause is
			// often there (kube-proxy's sync errors, kubelet's CNI calls).
			for _, n := range c.Nodes {
				t.Logf("%s", n.Diagnose())
			}
		}
	})
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, c *Cluster) kubernetes.Interface {
	t.Helper()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// manifest is prog/weave-kube/weave-daemonset-k8s.yaml with only its
// image: lines changed.
func manifest(t *testing.T, ref string) []byte {
	t.Helper()
	root, err := netnstest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(root, "prog", "weave-kube", "weave-daemonset-k8s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err = image.SetManifestImage(m, ref)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// weaveArchive builds the weave-kube image (tags test-1 and test-2) once.
func weaveArchive(t *testing.T) string {
	t.Helper()
	shared.archiveOnce.Do(func() {
		shared.archive, shared.archiveErr = BuildWeaveImage(shared.dir, weaveImage, strings.Replace(weaveImage, "test-1", "test-2", 1))
		if st, err := os.Stat(shared.archive); err == nil {
			t.Logf("weave-kube image archive: %.1f MB", float64(st.Size())/1e6)
		}
	})
	if shared.archiveErr != nil {
		t.Fatalf("build the weave-kube image: %v", shared.archiveErr)
	}
	return shared.archive
}

// rollOut imports the image into c's nodes, applies the manifest and
// waits for the DaemonSet to be ready on every node; it returns how long
// that took from the apply.
func rollOut(t *testing.T, c *Cluster) (time.Duration, error) {
	if err := c.ImportImage(weaveArchive(t)); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if _, err := c.Kubectl(ctxT(t, time.Minute), manifest(t, weaveImage), "apply", "-f", "-"); err != nil {
		return 0, err
	}
	err := waitDaemonSet(ctxT(t, 4*time.Minute), c, weaveImage)
	return time.Since(t0), err
}

// applyWeave rolls the DaemonSet out on the package's cluster, once.
func applyWeave(t *testing.T, c *Cluster) {
	t.Helper()
	shared.weaveOnce.Do(func() { shared.applied, shared.weaveErr = rollOut(t, c) })
	if shared.weaveErr != nil {
		t.Fatalf("weave-net DaemonSet: %v", shared.weaveErr)
	}
}

// waitDaemonSet waits until DaemonSet kube-system/weave-net runs image on
// every node, every pod Ready, and every Node NetworkUnavailable=False.
func waitDaemonSet(ctx context.Context, c *Cluster, img string) error {
	cl, err := c.Client()
	if err != nil {
		return err
	}
	var last string
	for {
		last = func() string {
			ds, err := cl.AppsV1().DaemonSets("kube-system").Get(ctx, "weave-net", metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			st := ds.Status
			if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled != int32(len(c.Nodes)) ||
				st.UpdatedNumberScheduled != st.DesiredNumberScheduled || st.NumberReady != st.DesiredNumberScheduled {
				return fmt.Sprintf("DaemonSet: desired %d, updated %d, ready %d", st.DesiredNumberScheduled, st.UpdatedNumberScheduled, st.NumberReady)
			}
			pods, err := cl.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "name=weave-net"})
			if err != nil {
				return err.Error()
			}
			ready := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == img && podReady(&p) {
					ready++
				}
			}
			if ready != len(c.Nodes) {
				return fmt.Sprintf("%d of %d weave-net pods with %s ready", ready, len(c.Nodes), img)
			}
			nodes, err := cl.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return err.Error()
			}
			for _, n := range nodes.Items {
				if cond(n.Status.Conditions, corev1.NodeNetworkUnavailable) != corev1.ConditionFalse {
					return "Node " + n.Name + " NetworkUnavailable is not False"
				}
				if cond(n.Status.Conditions, corev1.NodeReady) != corev1.ConditionTrue {
					return "Node " + n.Name + " not Ready"
				}
			}
			return ""
		}()
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not rolled out: %s\n%s", last, c.weaveLogs())
		case <-time.After(time.Second):
		}
	}
}

// weaveLogs is the tail of every weave-net pod's containers' logs.
func (c *Cluster) weaveLogs() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _ := c.Kubectl(ctx, nil, "-n", "kube-system", "get", "pods", "-o", "wide")
	for _, ctr := range []string{"weave-init", "weave", "weave-npc"} {
		logs, _ := c.Kubectl(ctx, nil, "-n", "kube-system", "logs", "-l", "name=weave-net", "-c", ctr, "--tail=15", "--prefix")
		out += logs
	}
	return out
}

func cond(cs []corev1.NodeCondition, typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestDaemonSetRollout: `kubectl apply` of our manifest (image name
// substituted, nothing else) on a cluster of real kubelets: the DaemonSet
// is Ready on every node and every Node is NetworkUnavailable=False.
func TestDaemonSetRollout(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	t.Logf("kubectl apply -> DaemonSet ready on %d nodes, NetworkUnavailable=False: %v", len(c.Nodes), shared.applied.Round(100*time.Millisecond))
	// The routers found each other from the Node list.
	for _, n := range c.Nodes {
		b, err := n.WeaveGet(ctxT(t, 15*time.Second), "/report")
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Router struct {
				Peers []struct{ NickName string }
			}
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("%s: /report: %v", n.Name, err)
		}
		if len(rep.Router.Peers) != len(c.Nodes) {
			t.Errorf("%s: router knows %d peers, want %d: %+v", n.Name, len(rep.Router.Peers), len(c.Nodes), rep.Router.Peers)
		}
	}
	usage(t, c)
}

// usage logs what one node costs (RSS and CPU of its processes over 10 s
// at idle).
func usage(t *testing.T, c *Cluster) {
	u1 := c.Usage()
	time.Sleep(10 * time.Second)
	u2 := c.Usage()
	for _, n := range c.Nodes {
		a, b := u1[n.Name], u2[n.Name]
		t.Logf("%s: %d processes, RSS %.0f MB, CPU %.1f%% of a core at idle", n.Name, b.Procs, float64(b.RSS)/1e6,
			100*(b.CPU-a.CPU).Seconds()/10)
	}
	a, b := u1["control-plane"], u2["control-plane"]
	t.Logf("control plane: RSS %.0f MB, CPU %.1f%% of a core at idle", float64(b.RSS)/1e6, 100*(b.CPU-a.CPU).Seconds()/10)
}
