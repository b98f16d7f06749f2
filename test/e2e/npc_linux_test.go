package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/npc/npctest"
	"github.com/seedf75a49c6/weave/test/k8s"
)

// npcPod is a pod: a container namespace on a host, serving TCP and UDP on
// 80, 81 and 83, with "web" as a named container port.
type npcPod struct {
	id   string // "x/a"
	c    *netnstest.Container
	node string
	web  int32
}

// npcCluster is two routers under --expect-npc, a real API server and one
// weave-npc per host.
type npcCluster struct {
	*cluster
	srv   *k8s.Server
	admin kubernetes.Interface
	pods  map[string]*npcPod
	npc   map[string]*npcProc
}

// TestNetworkPolicyEndToEnd creates policies through a real kube-apiserver
// and checks real TCP and UDP connections between pods on two hosts (same
// host and across), after each policy change, label change and deletion.
func TestNetworkPolicyEndToEnd(t *testing.T) {
	nc := newNPCCluster(t)
	// --expect-npc: before weave-npc runs, the bridge is closed.
	if ok, _ := npctest.Probe(netnstest.NSPath(nc.pods["y/a"].c.NS), "tcp", nc.pods["x/a"].c.IP(), 80, time.Second); ok {
		t.Errorf("router --expect-npc without weave-npc: y/a -> x/a got through")
	}
	for _, h := range []string{"h1", "h2"} {
		nc.npc[h] = nc.startNPC(h)
	}
	nc.expect("no policies", nil)
	nc.createPolicy(xIngressPolicy())
	step1 := []string{"x/b->x/a tcp/81", "x/b->x/a udp/81", "y/a->x/a tcp/80", "y/a->x/a tcp/81", "y/b->x/a tcp/80", "y/b->x/a tcp/81",
		"x/a->x/b tcp/80", "x/a->x/b tcp/81", "x/a->x/b udp/81", "y/a->x/b tcp/80", "y/a->x/b tcp/81", "y/b->x/b tcp/80", "y/b->x/b tcp/81"}
	nc.expect("ingress into x: x/b on named port web, namespace y on UDP 81", step1)
	nc.createPolicy(yEgressPolicy())
	step2 := append(slices.Clone(step1), "y/a->x/a udp/81", "y/a->x/b udp/81", "y/a->y/b udp/81")
	nc.expect("plus egress of y/a: TCP 80-81 to 10.2.1.0/24 except x/b", step2)
	nc.relabel("x/a", map[string]string{"pod": "b"})
	step3 := slices.DeleteFunc(slices.Clone(step2), func(s string) bool { return s == "x/a->x/b tcp/81" })
	nc.expect("x/a relabelled pod=b: it reaches x/b's web port (81)", step3)
	nc.deletePolicy("x", "ingress")
	nc.expect("x's policy deleted; y/a's egress still applies",
		[]string{"y/a->x/a udp/81", "y/a->x/b tcp/80", "y/a->x/b tcp/81", "y/a->x/b udp/81", "y/a->y/b udp/81"})
	nc.deletePolicy("y", "egress")
	nc.expect("every policy deleted", nil)
	nc.createPolicy(yEgressNamedPolicy())
	nc.expect("egress of y/a to namespace x on named port web only (80 on x/a, 81 on x/b)",
		[]string{"y/a->x/a tcp/81", "y/a->x/a udp/81", "y/a->x/b tcp/80", "y/a->x/b udp/81", "y/a->y/b tcp/80", "y/a->y/b tcp/81", "y/a->y/b udp/81"})
	nc.checkBlockedMetric("h1")
	nc.checkEgressToOwnNode()
}

func newNPCCluster(t *testing.T) *npcCluster {
	srv := k8s.Start(t)
	nc := &npcCluster{cluster: newCluster(t, clusterOpts{hosts: 2, expectNPC: true}), srv: srv, admin: srv.Admin(t),
		pods: map[string]*npcPod{}, npc: map[string]*npcProc{}}
	for _, ns := range []string{"x", "y"} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"ns": ns}}}
		if _, err := nc.admin.CoreV1().Namespaces().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct {
		id, node, ip string
		web          int32
	}{{"x/a", "h1", "10.2.1.11", 80}, {"x/b", "h2", "10.2.1.12", 81}, {"y/a", "h1", "10.2.1.21", 80}, {"y/b", "h2", "10.2.1.22", 80}} {
		nc.addPod(p.id, p.node, p.ip, p.web)
	}
	nc.grantNPC()
	return nc
}

func (nc *npcCluster) addPod(id, node, ip string, web int32) {
	t := nc.t
	h := nc.host(map[string]int{"h1": 1, "h2": 2}[node])
	c := nc.tp.AddContainer(h, strings.ReplaceAll(id, "/", ""), ip+"/24")
	npctest.Serve(t, netnstest.NSPath(c.NS), 80, 81, 83)
	ns, name, _ := strings.Cut(id, "/")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"pod": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: web}}}}}}
	created, err := nc.admin.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nc.srv.SetPodIP(t, created, ip)
	nc.pods[id] = &npcPod{id: id, c: c, node: node, web: web}
}

// grantNPC gives ServiceAccount kube-system/weave-npc what 2.8.1's
// manifest gives weave-npc: read pods, namespaces and network policies.
func (nc *npcCluster) grantNPC() {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "weave-npc"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "weave-npc"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "weave-npc"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "kube-system", Name: "weave-npc"}}}
	if _, err := nc.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		nc.t.Fatal(err)
	}
	if _, err := nc.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		nc.t.Fatal(err)
	}
}
