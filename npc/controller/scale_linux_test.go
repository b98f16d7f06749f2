//go:build linux

package controller

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/npc"
	"github.com/seedf75a49c6/weave/npc/nft"
)

// Scale of the benchmark: one node with 1,000 pods in 50 namespaces and
// 200 policies (4 per namespace).
const (
	scaleNamespaces  = 50
	podsPerNamespace = 20
)

func scaleObjects() []runtime.Object {
	var objs []runtime.Object
	for n := range scaleNamespaces {
		ns := fmt.Sprintf("ns%02d", n)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": fmt.Sprintf("t%d", n%5)}}})
		for i := range podsPerNamespace {
			ip := fmt.Sprintf("10.%d.%d.%d", 32+n/50, n%50, i+1)
			p := apiPod(ns, fmt.Sprintf("p%02d", i), "n1", ip, map[string]string{"app": fmt.Sprintf("app-%d", i%5)})
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(8080 + i%3)}}
			objs = append(objs, p)
		}
		objs = append(objs, scalePolicies(ns)...)
	}
	return objs
}

// scalePolicies: default-deny ingress, app-1 from app-0 on TCP 8080-8090,
// from team t0 namespaces on named port http, and egress of app-2 to
// 10.0.0.0/8 except 10.33.0.0/16 on UDP 53 or to the namespace's pods.
func scalePolicies(ns string) []runtime.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	app := func(a string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": a}}
	}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	p8080, http, p53, end := intstr.FromInt32(8080), intstr.FromString("http"), intstr.FromInt32(53), int32(8090)
	return []runtime.Object{
		&networkingv1.NetworkPolicy{ObjectMeta: meta("deny"), Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress"}}},
		&networkingv1.NetworkPolicy{ObjectMeta: meta("app1-from-app0"), Spec: networkingv1.NetworkPolicySpec{PodSelector: *app("app-1"),
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: app("app-0")}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p8080, EndPort: &end}}}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: meta("from-t0"), Spec: networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "t0"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &http}}}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: meta("app2-egress"), Spec: networkingv1.NetworkPolicySpec{PodSelector: *app("app-2"),
			PolicyTypes: []networkingv1.PolicyType{"Egress"},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.33.0.0/16"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &p53}}},
				{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}}},
	}
}

// BenchmarkScale1000Pods200Policies measures, on one node with 1,000 pods
// and 200 policies, the time from a pod's label change in the API to the
// new table being loaded in the kernel (informer, translation, one nftables
// transaction), and reports the table's size.
func BenchmarkScale1000Pods200Policies(b *testing.B) {
	netnstest.RequireRoot(b)
	_, path := netnstest.NewNS(b)
	var enf *nft.Enforcer
	if err := netns.Do(path, func() (err error) { enf, err = nft.New(nft.Config{}); return err }); err != nil {
		b.Fatal(err)
	}
	defer enf.Close()
	client := fake.NewClientset(scaleObjects()...)
	c, err := New(Config{Client: client, NodeName: "n1", Enforcer: enf, Log: slog.New(slog.DiscardHandler), PollInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	ch := make(chan Applied, 16)
	c.Notify(ch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go func() { _ = c.Run(ctx) }()
	first := <-ch
	firstLoad := time.Since(start)
	pod, err := client.CoreV1().Pods("ns00").Get(ctx, "p00", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		pod.Labels["app"] = fmt.Sprintf("app-%d", (i+1)%2)
		if pod, err = client.CoreV1().Pods("ns00").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			b.Fatal("no load within 30s of a label change")
		}
	}
	b.StopTimer()
	// Reported after the loop: ResetTimer drops metrics reported before it.
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/change")
	b.ReportMetric(float64(firstLoad.Milliseconds()), "ms-first-load")
	b.ReportMetric(float64(first.Stats.Rules), "rules")
	b.ReportMetric(float64(first.Stats.Sets), "sets")
	b.ReportMetric(float64(first.Stats.Elements), "set-elements")
}

// A table for the benchmark's 1,000 pods and 200 policies loads in one
// transaction (it is larger than the default netlink socket buffer).
func TestLargeTableLoads(t *testing.T) {
	_, path := netnstest.NewNS(t)
	var enf *nft.Enforcer
	if err := netns.Do(path, func() (err error) { enf, err = nft.New(nft.Config{}); return err }); err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	c, err := New(Config{Client: fake.NewClientset(scaleObjects()...), NodeName: "n1", Enforcer: enf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.factory.Start(ctx.Done())
	c.factory.WaitForCacheSync(ctx.Done())
	in, err := c.input()
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Pods) != scaleNamespaces*podsPerNamespace || len(in.Policies) != 4*scaleNamespaces {
		t.Fatalf("fixture has %d pods and %d policies", len(in.Pods), len(in.Policies))
	}
	st, err := enf.Apply(npc.Translate(in))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %+v", st)
}
