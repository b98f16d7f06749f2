package cluster

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

var containerID = regexp.MustCompile(`[0-9a-f]{64}`)

// sandboxHist is the kubelet's RunPodSandbox latency histogram (sandbox
// and network: containerd calls the CNI ADD inside it) on node n.
func sandboxHist(t *testing.T, c *Cluster, n *Node) *dto.Histogram {
	t.Helper()
	out, err := c.Kubectl(ctxT(t, time.Minute), nil, "get", "--raw", "/api/v1/nodes/"+n.Name+"/proxy/metrics")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%s: kubelet metrics: %v", n.Name, err)
	}
	f := fams["kubelet_runtime_operations_duration_seconds"]
	if f == nil {
		t.Fatalf("%s: no kubelet_runtime_operations_duration_seconds", n.Name)
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "operation_type" && l.GetValue() == "run_podsandbox" {
				return m.Histogram
			}
		}
	}
	return &dto.Histogram{}
}

// quantile of the observations between two snapshots of a histogram, by
// linear interpolation inside the bucket (as Prometheus' histogram_quantile).
func quantile(q float64, before, after []*dto.Histogram) (float64, uint64) {
	counts := map[float64]uint64{}
	var total uint64
	for i := range after {
		b := map[float64]uint64{}
		for _, k := range before[i].Bucket {
			b[k.GetUpperBound()] = k.GetCumulativeCount()
		}
		for _, k := range after[i].Bucket {
			counts[k.GetUpperBound()] += k.GetCumulativeCount() - b[k.GetUpperBound()]
		}
		total += after[i].GetSampleCount() - before[i].GetSampleCount()
	}
	var bounds []float64
	for ub := range counts {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	rank := q * float64(total)
	lower, prev := 0.0, uint64(0)
	for _, ub := range bounds {
		if float64(counts[ub]) >= rank {
			if math.IsInf(ub, 1) {
				return lower, total
			}
			inBucket := float64(counts[ub] - prev)
			if inBucket == 0 {
				return ub, total
			}
			return lower + (ub-lower)*(rank-float64(prev))/inBucket, total
		}
		lower, prev = ub, counts[ub]
	}
	return lower, total
}

// liveContainers are the IDs of the node's containers and sandboxes.
func liveContainers(t *testing.T, n *Node) map[string]bool {
	t.Helper()
	out, err := n.ctr(ctxT(t, 30*time.Second), "containers", "ls", "-q")
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, id := range strings.Fields(out) {
		live[id] = true
	}
	return live
}

// TestChurn: 100 pods created and deleted in waves; afterwards no router
// holds an address for a deleted pod, no CNI record, veth or nftables
// element is left for one; and the CNI ADD latency (the kubelet's
// RunPodSandbox, which wraps it) p50/p99.
func TestChurn(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	const ns, waves, perWave = "churn", 4, 25
	namespace(t, c, ns, "test: churn")
	var before []*dto.Histogram
	for _, n := range c.Nodes {
		before = append(before, sandboxHist(t, c, n))
	}
	churned := map[string]bool{} // addresses the churned pods had
	t0 := time.Now()
	for w := range waves {
		apply(t, c, echoDeployment(ns, "churn", perWave))
		for _, p := range readyPods(t, c, ns, "churn", perWave, 5*time.Minute) {
			churned[p.Status.PodIP] = true
		}
		if _, err := c.Kubectl(ctxT(t, 3*time.Minute), nil, "-n", ns, "delete", "deployment", "churn", "--wait=true"); err != nil {
			t.Fatal(err)
		}
		awaitNoPods(t, c, ns)
		t.Logf("wave %d: %d pods up and gone, %v so far", w+1, perWave, time.Since(t0).Round(time.Second))
	}
	var after []*dto.Histogram
	for _, n := range c.Nodes {
		after = append(after, sandboxHist(t, c, n))
	}
	p50, count := quantile(0.5, before, after)
	p99, _ := quantile(0.99, before, after)
	t.Logf("%d pods churned in %v; RunPodSandbox (incl. CNI ADD) over %d sandboxes: p50 %.0f ms, p99 %.0f ms",
		waves*perWave, time.Since(t0).Round(time.Second), count, p50*1000, p99*1000)
	if count < waves*perWave {
		t.Errorf("kubelet counted %d sandboxes, want at least %d", count, waves*perWave)
	}

	// Other tests' pods may still run: what belongs to them is not a leak.
	livePods, err := client(t, c).CoreV1().Pods("").List(ctxT(t, 30*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	liveIPs := map[string]bool{}
	podsOn := map[string]int{}
	for _, p := range livePods.Items {
		if !p.Spec.HostNetwork {
			liveIPs[p.Status.PodIP] = true
			podsOn[p.Spec.NodeName]++
		}
	}
	for _, n := range c.Nodes {
		err := netnstest.Poll(time.Minute, func() error { return leaks(t, n, churned, liveIPs, podsOn[n.Name]) })
		if err != nil {
			t.Error(err)
		}
	}
}

func awaitNoPods(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	cl := client(t, c)
	err := netnstest.Poll(3*time.Minute, func() error {
		pods, err := cl.CoreV1().Pods(ns).List(ctxT(t, 30*time.Second), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left in %s", len(pods.Items), ns)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// leaks lists what node n still holds for pods that are gone.
func leaks(t *testing.T, n *Node, churned, liveIPs map[string]bool, pods int) error {
	live := liveContainers(t, n)
	var bad []string
	// The router's IPAM: every owner is a live sandbox (or the bridge).
	b, err := n.WeaveGet(ctxT(t, 15*time.Second), "/ip")
	if err != nil {
		return err
	}
	var owned struct {
		Owned []struct {
			ContainerID string
			Addrs       []string
		}
	}
	if err := json.Unmarshal(b, &owned); err != nil {
		return fmt.Errorf("%s: GET /ip: %v: %s", n.Name, err, b)
	}
	for _, o := range owned.Owned {
		if o.ContainerID != "weave:expose" && !live[o.ContainerID] {
			bad = append(bad, fmt.Sprintf("IPAM %s owned by gone %s", o.Addrs, o.ContainerID))
		}
	}
	// CNI records (ours and libcni's cache) of gone sandboxes.
	_ = filepath.WalkDir(n.HostPath("/var/lib/cni"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			for _, id := range containerID.FindAllString(d.Name(), -1) {
				if !live[id] {
					bad = append(bad, "CNI record "+p)
				}
			}
		}
		return nil
	})
	// veths on the bridge: one per live pod of this node.
	links, err := n.Exec(ctxT(t, 15*time.Second), "ip", "-o", "link", "show", "master", "weave")
	if err != nil {
		return err
	}
	veths := 0
	for _, l := range strings.Split(links, "\n") {
		if strings.Contains(l, "vethwepl") {
			veths++
		}
	}
	if veths > pods {
		bad = append(bad, fmt.Sprintf("%d pod veths on the bridge for %d pods", veths, pods))
	}
	// weave-npc's nftables: no address of a gone pod.
	rules, err := n.Exec(ctxT(t, 15*time.Second), "nft", "list", "ruleset")
	if err != nil {
		return err
	}
	for ip := range churned {
		if !liveIPs[ip] && regexp.MustCompile(`[^0-9.]`+regexp.QuoteMeta(ip)+`[^0-9./]`).MatchString(rules) {
			bad = append(bad, "nftables still names "+ip)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %s", n.Name, strings.Join(bad, "; "))
	}
	return nil
}
