package controller

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/seedf75a49c6/weave/npc"
	"github.com/seedf75a49c6/weave/npc/nft"
)

// fakeEnforcer records loads and serves scripted drop counters.
type fakeEnforcer struct {
	mu      sync.Mutex
	blocked []nft.Blocked
}

func (f *fakeEnforcer) Apply(m *npc.Model) (nft.Stats, error) {
	return nft.Stats{Rules: len(m.Rules), Sets: len(m.Sets)}, nil
}

func (f *fakeEnforcer) Blocked() ([]nft.Blocked, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocked, nil
}

func start(t *testing.T, objs ...any) (*fake.Clientset, chan Applied, *fakeEnforcer, *prometheus.Registry) {
	t.Helper()
	client := fake.NewClientset()
	enf := &fakeEnforcer{}
	reg := prometheus.NewRegistry()
	c, err := New(Config{Client: client, NodeName: "n1", Enforcer: enf, Registerer: reg, PollInterval: 20 * time.Millisecond,
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan Applied, 100)
	c.Notify(ch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return client, ch, enf, reg
}

// await waits until a load's model satisfies ok.
func await(t *testing.T, ch chan Applied, what string, ok func(*npc.Model) bool) *npc.Model {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case a := <-ch:
			if ok(a.Model) {
				return a.Model
			}
		case <-deadline:
			t.Fatalf("timed out waiting for a load where %s", what)
		}
	}
}

func apiPod(ns, name, node, ip string, lbl map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// The controller follows the API: a policy, a pod appearing, a label
// change and the policy's deletion each lead to a load that reflects it.
func TestControllerFollowsAPI(t *testing.T) {
	client, ch, _, _ := start(t)
	ctx := context.Background()
	await(t, ch, "the first, empty table is loaded", func(m *npc.Model) bool { return len(m.Rules) == 0 })
	pol := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "deny"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := client.NetworkingV1().NetworkPolicies("x").Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := apiPod("x", "w", "n1", "10.32.0.7", map[string]string{"app": "web"})
	if _, err := client.CoreV1().Pods("x").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod on another node is a peer, never a target here.
	if _, err := client.CoreV1().Pods("x").Create(ctx, apiPod("x", "r", "n2", "10.32.0.8", map[string]string{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	isolated := func(ip string) func(*npc.Model) bool {
		return func(m *npc.Model) bool {
			return setHas(m, npc.SetIngressIsolated, ip)
		}
	}
	m := await(t, ch, "x/w is isolated", isolated("10.32.0.7"))
	if setHas(m, npc.SetIngressIsolated, "10.32.0.8") {
		t.Errorf("pod of node n2 isolated on n1:\n%s", m)
	}
	web.Labels = map[string]string{"app": "db"}
	if _, err := client.CoreV1().Pods("x").Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, ch, "relabelled x/w is open", func(m *npc.Model) bool { return !setHas(m, npc.SetIngressIsolated, "10.32.0.7") })
	web.Labels = map[string]string{"app": "web"}
	if _, err := client.CoreV1().Pods("x").Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, ch, "x/w isolated again", isolated("10.32.0.7"))
	web.Status.PodIP = "10.32.0.9" // a new IP (pod recreated under the same name)
	if _, err := client.CoreV1().Pods("x").UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, ch, "x/w isolated under its new IP only", func(m *npc.Model) bool {
		return setHas(m, npc.SetIngressIsolated, "10.32.0.9") && !setHas(m, npc.SetIngressIsolated, "10.32.0.7")
	})
	if err := client.NetworkingV1().NetworkPolicies("x").Delete(ctx, "deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, ch, "policy deleted: x/w open", func(m *npc.Model) bool { return !setHas(m, npc.SetIngressIsolated, "10.32.0.9") })
}

func setHas(m *npc.Model, set, ip string) bool {
	return m.Sets[set] != nil && inRanges(m.Sets[set], ip)
}

func inRanges(s *npc.Set, ip string) bool {
	a := netip.MustParseAddr(ip)
	for _, r := range s.Addrs {
		if a.Compare(r.First) >= 0 && a.Compare(r.Last) <= 0 {
			return true
		}
	}
	return false
}

// Drop counters become monotonic metrics across table swaps.
func TestBlockedCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := &counters{last: map[blockedKey]uint64{}, m: newMetrics(reg), log: slog.New(slog.DiscardHandler)}
	c.observe([]nft.Blocked{{Proto: npc.TCP, Port: 80, Packets: 3}})
	c.observe([]nft.Blocked{{Proto: npc.TCP, Port: 80, Packets: 5}, {Proto: npc.UDP, Port: 53, Packets: 1}})
	c.reset() // table swapped: kernel counters start again
	c.observe([]nft.Blocked{{Proto: npc.TCP, Port: 80, Packets: 2}})
	want := `
# HELP weavenpc_blocked_connections_total New connections dropped by NetworkPolicy, by protocol and destination port.
# TYPE weavenpc_blocked_connections_total counter
weavenpc_blocked_connections_total{dport="53",protocol="udp"} 1
weavenpc_blocked_connections_total{dport="80",protocol="tcp"} 7
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "weavenpc_blocked_connections_total"); err != nil {
		t.Error(err)
	}
}
