package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/npc/npctest"
)

// npcProc is a running weave-npc, in the root namespace (where the API
// server listens) enforcing in its host's namespace (--netns).
type npcProc struct {
	cmd *exec.Cmd
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (nc *npcCluster) startNPC(node string) *npcProc {
	t := nc.t
	kubeconfig := nc.srv.WriteKubeconfig(t, nc.srv.ServiceAccountConfig(t, "kube-system", "weave-npc"))
	bin := filepath.Join(filepath.Dir(build.weave), "bin", "weave-npc")
	h := nc.host(map[string]int{"h1": 1, "h2": 2}[node])
	p := &npcProc{log: &syncBuffer{}}
	p.cmd = exec.Command(bin, "--node-name", node, "--kubeconfig", kubeconfig, "--netns", netnstest.NSPath(h.NS),
		"--metrics-addr", "127.0.0.1:0", "--blocked-poll-interval", "200ms", "--log-level", "debug")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start weave-npc for %s: %v", node, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("weave-npc %s log:\n%s", node, p.log.String())
		}
	})
	return p
}

// probeNames lists every probe of a matrix as "src->dst proto/port".
func (nc *npcCluster) probeNames() []string {
	var out []string
	for _, s := range sortedIDs(nc.pods) {
		for _, d := range sortedIDs(nc.pods) {
			if s != d {
				for _, pr := range []string{"tcp/80", "tcp/81", "udp/81"} {
					out = append(out, s+"->"+d+" "+pr)
				}
			}
		}
	}
	return out
}

func sortedIDs(m map[string]*npcPod) []string {
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// probe is one parsed probe name.
type probe struct {
	src, dst, proto string
	port            int
}

func parseProbe(name string) probe {
	pair, what, _ := strings.Cut(name, " ")
	src, dst, _ := strings.Cut(pair, "->")
	proto, port, _ := strings.Cut(what, "/")
	n, _ := strconv.Atoi(port)
	return probe{src, dst, proto, n}
}

// matrix probes everything at once and returns the denied probes.
func (nc *npcCluster) matrix() []string {
	names := nc.probeNames()
	ok := make([]bool, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			p := parseProbe(n)
			src, dst := nc.pods[p.src], nc.pods[p.dst]
			r, err := npctest.Probe(netnstest.NSPath(src.c.NS), p.proto, dst.c.IP(), p.port, 800*time.Millisecond)
			ok[i] = err == nil && r
		})
	}
	wg.Wait()
	var denied []string
	for i, n := range names {
		if !ok[i] {
			denied = append(denied, n)
		}
	}
	return denied
}

// expect polls the matrix until exactly the probes in denied fail.
func (nc *npcCluster) expect(what string, denied []string) {
	nc.t.Helper()
	want := slices.Sorted(slices.Values(denied))
	var got []string
	err := netnstest.Poll(30*time.Second, func() error {
		got = slices.Sorted(slices.Values(nc.matrix()))
		if !slices.Equal(got, want) {
			return fmt.Errorf("denied %q, want %q", got, want)
		}
		return nil
	})
	if err != nil {
		nc.t.Fatalf("%s: %v", what, err)
	}
	nc.t.Logf("%s: %d probes (TCP/UDP, same host and across), %d denied as the policies say", what, len(nc.probeNames()), len(want))
}

func (nc *npcCluster) createPolicy(p *networkingv1.NetworkPolicy) {
	if _, err := nc.admin.NetworkingV1().NetworkPolicies(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		nc.t.Fatalf("create NetworkPolicy %s/%s: %v", p.Namespace, p.Name, err)
	}
}

func (nc *npcCluster) deletePolicy(ns, name string) {
	if err := nc.admin.NetworkingV1().NetworkPolicies(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		nc.t.Fatalf("delete NetworkPolicy %s/%s: %v", ns, name, err)
	}
}

func (nc *npcCluster) relabel(id string, labels map[string]string) {
	ns, name, _ := strings.Cut(id, "/")
	pods := nc.admin.CoreV1().Pods(ns)
	p, err := pods.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		nc.t.Fatal(err)
	}
	p.Labels = labels
	if _, err := pods.Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		nc.t.Fatalf("relabel pod %s: %v", id, err)
	}
}

// xIngressPolicy: pods of x admit x's pod=b on the named port "web" (80 on
// x/a, 81 on x/b) and namespace y on UDP 81.
func xIngressPolicy() *networkingv1.NetworkPolicy {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	web, p81 := intstr.FromString("web"), intstr.FromInt32(81)
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "ingress"},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{
			{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod": "b"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &web}}},
			{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ns": "y"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &p81}}},
		}}}
}

// yEgressPolicy: y/a may open only TCP 80-81 connections into 10.2.1.0/24
// except x/b (10.2.1.12).
func yEgressPolicy() *networkingv1.NetworkPolicy {
	tcp, p80, end := corev1.ProtocolTCP, intstr.FromInt32(80), int32(81)
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "y", Name: "egress"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pod": "a"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.2.1.0/24", Except: []string{"10.2.1.12/32"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p80, EndPort: &end}},
			}}}}
}

// yEgressNamedPolicy: y/a may open connections only to pods of namespace x,
// on their named port "web".
func yEgressNamedPolicy() *networkingv1.NetworkPolicy {
	tcp, web := corev1.ProtocolTCP, intstr.FromString("web")
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "y", Name: "egress-named"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pod": "a"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ns": "x"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &web}},
			}}}}
}

var metricsAddrRE = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// checkBlockedMetric reads weave-npc's /metrics: the denied probes were
// counted per protocol and port.
func (nc *npcCluster) checkBlockedMetric(node string) {
	p := nc.npc[node]
	m := metricsAddrRE.FindStringSubmatch(p.log.String())
	if m == nil {
		nc.t.Fatalf("weave-npc %s did not log its metrics address", node)
	}
	netnstest.WaitFor(nc.t, 10*time.Second, "blocked connections in weave-npc's metrics", func() error {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), `weavenpc_blocked_connections_total{dport="80",protocol="tcp"}`) {
			return fmt.Errorf("no tcp/80 blocked counter in:\n%s", b)
		}
		return nil
	})
	if !strings.Contains(p.log.String(), "blocked new connections") {
		nc.t.Errorf("weave-npc %s logged no blocked connections", node)
	}
}
