package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// echoDeployment is a Deployment of replicas pods running the echo server
// on 8080 (a line "<pod name> <client address>" per connection), spread
// evenly over the nodes.
func echoDeployment(ns, name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  replicas: %[3]d
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: %[2]s}}}
      containers:
      - name: echo
        image: %[4]s
        imagePullPolicy: Never
        command: [/bin/echo-server, -port, "8080"]
        ports: [{name: echo, containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
`, ns, name, replicas, BoxImage)
}

// echoPods makes namespace ns and perNode echo pods per node in it, and
// returns them once Ready.
func echoPods(t *testing.T, c *Cluster, ns string, perNode int) []corev1.Pod {
	t.Helper()
	namespace(t, c, ns, "test: "+ns)
	n := perNode * len(c.Nodes)
	apply(t, c, echoDeployment(ns, "echo", n))
	return readyPods(t, c, ns, "echo", n, 3*time.Minute)
}

// apply runs kubectl apply -f - with yaml.
func apply(t *testing.T, c *Cluster, yaml string) {
	t.Helper()
	if _, err := c.Kubectl(ctxT(t, time.Minute), []byte(yaml), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

func namespace(t *testing.T, c *Cluster, ns string, labels string) {
	t.Helper()
	apply(t, c, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {%s}}\n", ns, labels))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, _ = c.Kubectl(ctx, nil, "delete", "namespace", ns, "--wait=true")
	})
}

// readyPods waits for n Ready pods with label app=app in ns and returns them.
func readyPods(t *testing.T, c *Cluster, ns, app string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	cl := client(t, c)
	ctx := ctxT(t, timeout)
	var last string
	for {
		pods, err := cl.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		var ready []corev1.Pod
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					ready = append(ready, p)
				}
			}
			if len(ready) == n && len(pods.Items) == n {
				sort.Slice(ready, func(i, j int) bool { return ready[i].Spec.NodeName < ready[j].Spec.NodeName })
				return ready
			}
			last = fmt.Sprintf("%d of %d pods ready (%d exist)", len(ready), n, len(pods.Items))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			out, _ := c.Kubectl(ctxT(t, 30*time.Second), nil, "-n", ns, "get", "pods", "-o", "wide")
			ev, _ := c.Kubectl(ctxT(t, 30*time.Second), nil, "-n", ns, "get", "events", "--sort-by=.lastTimestamp")
			t.Fatalf("%s/%s: %s after %v\n%s\n%s", ns, app, last, timeout, out, netnstest.Tail(ev, 15))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// podSh runs a shell script in pod ns/name (kubectl exec).
func podSh(t *testing.T, c *Cluster, ns, pod, script string) string {
	t.Helper()
	out, err := c.Kubectl(ctxT(t, 2*time.Minute), nil, "-n", ns, "exec", pod, "--", "sh", "-c", script)
	if err != nil {
		t.Fatalf("exec in %s/%s: %v", ns, pod, err)
	}
	return out
}

// TestPodsAndServicesAcrossNodes: a Deployment spread over the nodes gets
// addresses from our CNI plugin through containerd; every pod reaches every
// other by ping and TCP (seeing the client's own address: no NAT inside
// the overlay); a ClusterIP and a NodePort Service (kube-proxy, iptables
// mode) reach pods on other nodes.
func TestPodsAndServicesAcrossNodes(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	podsAndServices(t, c)
}

// TestOtherIPTablesBackend: a second, 2-node cluster whose nodes (and so
// kube-proxy, and weave by its detection) use the other iptables backend
// (legacy when the package's cluster is nft): the DaemonSet rolls out, pods
// and Services work across nodes, NO_MASQ_LOCAL keeps the client address.
func TestOtherIPTablesBackend(t *testing.T) {
	shared := cluster(t)
	other := "legacy"
	if shared.Opts.IPTables == "legacy" {
		other = "nft"
	}
	c, err := Start(Options{Nodes: 2, IPTables: other, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if left := c.Leftovers(); len(left) > 0 {
			t.Errorf("the %s cluster left: %v", other, left)
		}
	})
	took, err := rollOut(t, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("iptables %s: DaemonSet ready on %d nodes %v after apply", other, len(c.Nodes), took.Round(100*time.Millisecond))
	for _, n := range c.Nodes {
		out, err := n.Exec(ctxT(t, 15*time.Second), "iptables-"+other+"-save", "-t", "nat")
		if err != nil || !strings.Contains(out, "KUBE-SERVICES") || !strings.Contains(out, ":WEAVE ") {
			t.Errorf("%s: kube-proxy's and weave's nat rules not both in iptables-%s: %v\n%s", n.Name, other, err, out)
		}
	}
	podsAndServices(t, c)
	noMasqLocal(t, c)
}

// podsAndServices checks pod addresses, pod-to-pod ping and TCP, a
// ClusterIP and a NodePort Service on c (two pods per node).
func podsAndServices(t *testing.T, c *Cluster) {
	const ns = "across"
	pods := echoPods(t, c, ns, 2)
	podRange := netip.MustParsePrefix(PodRange)
	seen := map[string]bool{}
	perNode := map[string]int{}
	for _, p := range pods {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !podRange.Contains(ip) {
			t.Errorf("pod %s on %s: address %q not in %s", p.Name, p.Spec.NodeName, p.Status.PodIP, PodRange)
		}
		if seen[p.Status.PodIP] {
			t.Errorf("address %s given twice", p.Status.PodIP)
		}
		seen[p.Status.PodIP] = true
		perNode[p.Spec.NodeName]++
	}
	if len(perNode) != len(c.Nodes) {
		t.Fatalf("pods on %d nodes, want all %d: %v", len(perNode), len(c.Nodes), perNode)
	}
	// Every pod to every other pod: ping, and a TCP connection that the
	// other side sees coming from the client pod's own address.
	var targets []string
	for _, p := range pods {
		targets = append(targets, p.Status.PodIP)
	}
	script := `for ip in ` + strings.Join(targets, " ") + `; do
	  if ping -c 1 -W 3 $ip >/dev/null 2>&1; then p=ok; else p=fail; fi
	  echo "$ip ping=$p tcp=$(nc -w 3 $ip 8080 </dev/null)"
	done`
	names := map[string]string{}
	for _, p := range pods {
		names[p.Status.PodIP] = p.Name
	}
	for _, from := range pods {
		out := podSh(t, c, ns, from.Name, script)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				t.Errorf("from %s: bad line %q", from.Name, line)
				continue
			}
			ip := f[0]
			want := fmt.Sprintf("%s ping=ok tcp=%s %s:", ip, names[ip], from.Status.PodIP)
			if !strings.HasPrefix(line, want) {
				t.Errorf("from %s (%s, %s) to %s (%s): got %q, want %q...", from.Name, from.Spec.NodeName, from.Status.PodIP, names[ip], ip, line, want)
			}
		}
	}
	t.Logf("%d pods on %v: each reached the %d others by ping and TCP", len(pods), perNode, len(pods)-1)

	// Services through kube-proxy.
	apply(t, c, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: echo, namespace: %[1]s}
spec:
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: echo-np, namespace: %[1]s}
spec:
  type: NodePort
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
`, ns))
	cl := client(t, c)
	svc, err := cl.CoreV1().Services(ns).Get(ctxT(t, 30*time.Second), "echo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np, err := cl.CoreV1().Services(ns).Get(ctxT(t, 30*time.Second), "echo-np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeOf := map[string]string{}
	for _, p := range pods {
		nodeOf[p.Name] = p.Spec.NodeName
	}
	// From the first node's pod: answers must come from pods on other nodes
	// too (kube-proxy picks at random among the six).
	from := pods[0]
	var answered map[string]bool
	err = netnstest.Poll(time.Minute, func() error {
		out := podSh(t, c, ns, from.Name, fmt.Sprintf(`for i in $(seq 12); do nc -w 3 %s 80 </dev/null; done; true`, svc.Spec.ClusterIP))
		answered = map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 && nodeOf[f[0]] != "" {
				answered[nodeOf[f[0]]] = true
			}
		}
		if len(answered) < 2 {
			return fmt.Errorf("ClusterIP %s from %s on %s: answers from nodes %v:\n%s", svc.Spec.ClusterIP, from.Name, from.Spec.NodeName, answered, out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ClusterIP %s:80 from a pod on %s: answered by pods on %v", svc.Spec.ClusterIP, from.Spec.NodeName, keys(answered))
	// NodePort from outside the cluster (the underlay namespace), on every node.
	port := np.Spec.Ports[0].NodePort
	failed := false
	for _, n := range c.Nodes {
		err := netnstest.Poll(time.Minute, func() error {
			out, err := exec.Command("nsenter", "--net="+nsPath(c.Underlay), "busybox", "nc", "-w", "3", n.IP, fmt.Sprint(port)).CombinedOutput()
			f := strings.Fields(string(out))
			if err != nil || len(f) != 2 || nodeOf[f[0]] == "" {
				return fmt.Errorf("NodePort %s:%d: %v: %q", n.IP, port, err, out)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
			failed = true
		}
	}
	if !failed {
		t.Logf("NodePort %d answered on every node from outside", port)
	}
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
