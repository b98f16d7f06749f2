package cluster

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// reachable is, for each of ips, whether pod ns/pod opened a TCP
// connection to it on port and got the echo server's line.
func reachable(t *testing.T, c *Cluster, ns, pod string, ips []string, port int) map[string]bool {
	t.Helper()
	out := podSh(t, c, ns, pod, fmt.Sprintf(`for ip in %s; do echo "$ip $(nc -w 1 $ip %d </dev/null)"; done`, strings.Join(ips, " "), port))
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 1 {
			got[f[0]] = len(f) == 3
		}
	}
	return got
}

func podIPs(pods []corev1.Pod) []string {
	var ips []string
	for _, p := range pods {
		ips = append(ips, p.Status.PodIP)
	}
	return ips
}

// awaitReach polls until every client pod reaches every server address
// (want true) or none does (want false).
func awaitReach(t *testing.T, c *Cluster, clients []corev1.Pod, servers []string, want bool, what string) {
	t.Helper()
	err := netnstest.Poll(time.Minute, func() error {
		for _, cl := range clients {
			got := reachable(t, c, cl.Namespace, cl.Name, servers, 8080)
			for _, ip := range servers {
				if got[ip] != want {
					return fmt.Errorf("%s/%s on %s -> %s: reached=%v, want %v", cl.Namespace, cl.Name, cl.Spec.NodeName, ip, got[ip], want)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestNetworkPolicy: the DaemonSet's weave-npc enforces NetworkPolicies
// on real pods across nodes: a default deny, then an allow by namespace
// label and by a named port.
func TestNetworkPolicy(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	namespace(t, c, "np-srv", "team: srv")
	namespace(t, c, "np-ok", "access: allowed")
	namespace(t, c, "np-no", "access: denied")
	apply(t, c, echoDeployment("np-srv", "srv", 3))
	apply(t, c, echoDeployment("np-ok", "cli", 3))
	apply(t, c, echoDeployment("np-no", "cli", 3))
	servers := podIPs(readyPods(t, c, "np-srv", "srv", 3, 3*time.Minute))
	ok := readyPods(t, c, "np-ok", "cli", 3, 3*time.Minute)
	no := readyPods(t, c, "np-no", "cli", 3, 3*time.Minute)
	clients := append(append([]corev1.Pod{}, ok...), no...)
	awaitReach(t, c, clients, servers, true, "no policy")

	apply(t, c, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: np-srv}
spec:
  podSelector: {}
  policyTypes: [Ingress]
`)
	awaitReach(t, c, clients, servers, false, "default deny")

	apply(t, c, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-allowed, namespace: np-srv}
spec:
  podSelector: {matchLabels: {app: srv}}
  policyTypes: [Ingress]
  ingress:
  - from: [{namespaceSelector: {matchLabels: {access: allowed}}}]
    ports: [{port: echo}]
`)
	awaitReach(t, c, ok, servers, true, "allowed namespace, named port")
	awaitReach(t, c, no, servers, false, "other namespace")
}

// TestNoMasqLocal: with NO_MASQ_LOCAL (the manifest's default) a client
// outside the overlay reaching a NodePort Service with
// externalTrafficPolicy: Local is seen by the pod with its own address.
func TestNoMasqLocal(t *testing.T) {
	c := cluster(t)
	applyWeave(t, c)
	noMasqLocal(t, c)
}

// noMasqLocal checks NO_MASQ_LOCAL on c (one pod per node).
func noMasqLocal(t *testing.T, c *Cluster) {
	const ns = "nomasq"
	pods := echoPods(t, c, ns, 1)
	apply(t, c, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: local, namespace: %s}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
`, ns))
	svc, err := client(t, c).CoreV1().Services(ns).Get(ctxT(t, 30*time.Second), "local", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := svc.Spec.Ports[0].NodePort
	nodeOf := map[string]string{}
	for _, p := range pods {
		nodeOf[p.Name] = p.Spec.NodeName
	}
	// The router masquerades traffic from outside into the bridge, except
	// to its own blocks (NO_MASQ_LOCAL): wait for both rules, so that the
	// check below could fail (without the RETURN the pod would see the
	// bridge's address).
	exempt := regexp.MustCompile(`(?m)^-A WEAVE -d 10\.[0-9.]+/[0-9]+ -j RETURN$`)
	masq := regexp.MustCompile(`(?m)^-A WEAVE ! -s \S+ -o weave -j MASQUERADE$`)
	for _, n := range c.Nodes {
		err := netnstest.Poll(30*time.Second, func() error {
			out, err := n.Exec(ctxT(t, 15*time.Second), "iptables-"+c.Opts.IPTables+"-save", "-t", "nat")
			if err != nil {
				return err
			}
			if !exempt.MatchString(out) || !masq.MatchString(out) {
				return fmt.Errorf("%s: nat WEAVE lacks the MASQUERADE into the bridge or the NO_MASQ_LOCAL exemption:\n%s", n.Name, out)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		var line string
		err := netnstest.Poll(time.Minute, func() error {
			out, err := exec.Command("nsenter", "--net="+nsPath(c.Underlay), "busybox", "nc", "-w", "3", n.IP, fmt.Sprint(port)).CombinedOutput()
			line = strings.TrimSpace(string(out))
			f := strings.Fields(line)
			if err != nil || len(f) != 2 {
				return fmt.Errorf("NodePort %s:%d: %v: %q", n.IP, port, err, out)
			}
			if nodeOf[f[0]] != n.Name {
				return fmt.Errorf("NodePort %s:%d (externalTrafficPolicy: Local) answered by %s on %q", n.IP, port, f[0], nodeOf[f[0]])
			}
			if !strings.HasPrefix(f[1], ControlIP+":") {
				return fmt.Errorf("pod %s on %s saw the client as %s, want %s (NO_MASQ_LOCAL)", f[0], n.Name, f[1], ControlIP)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
			continue
		}
		t.Logf("%s: %s", n.Name, line)
	}
}
