package k8s

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServerEnforcesRBAC: a ServiceAccount token authenticates but is
// forbidden to list Nodes until a ClusterRoleBinding grants it, so tests
// built on this harness catch missing permissions.
func TestServerEnforcesRBAC(t *testing.T) {
	srv := Start(t)
	srv.CreateNode(t, "n1", "192.168.100.1")
	sa := srv.Client(t, srv.ServiceAccountConfig(t, "kube-system", "probe"))
	_, err := sa.CoreV1().Nodes().List(ctx(t), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("list Nodes without a role: err = %v, want Forbidden", err)
	}
	admin := srv.Admin(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx(t), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "probe"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "kube-system", Name: "probe"}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx(t), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer reads bindings from its informer cache: a binding
	// takes effect when its watch event arrives (milliseconds; more on a
	// loaded machine), so the first list may still be refused.
	var nodes *corev1.NodeList
	deadline := time.Now().Add(15 * time.Second)
	for {
		if nodes, err = sa.CoreV1().Nodes().List(ctx(t), metav1.ListOptions{}); err == nil || !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("list Nodes with the role: %v", err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Status.Addresses[0].Address != "192.168.100.1" {
		t.Fatalf("nodes = %+v, want n1 with InternalIP 192.168.100.1", nodes.Items)
	}
	if err := sa.CoreV1().Nodes().Delete(ctx(t), "n1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete Node with a list-only role: err = %v, want Forbidden", err)
	}
}

// TestKubectlAndPods: kubectl talks to the server through a written
// kubeconfig, and a Pod's status written by SetPodIP is what a reader sees.
func TestKubectlAndPods(t *testing.T) {
	srv := Start(t)
	kc := srv.WriteKubeconfig(t, srv.AdminConfig())
	out, err := srv.Kubectl(t, kc, "version", "-o", "json")
	if err != nil || !strings.Contains(out, `"gitVersion": "v1.37.2"`) {
		t.Fatalf("kubectl version: %v\n%s", err, out)
	}
	srv.CreatePod(t, "ns1", "p1", "n1", map[string]string{"app": "x"}, "10.32.0.5")
	p, err := srv.Admin(t).CoreV1().Pods("ns1").Get(ctx(t), "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.PodIP != "10.32.0.5" || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "n1" {
		t.Fatalf("pod = ip %q phase %q node %q", p.Status.PodIP, p.Status.Phase, p.Spec.NodeName)
	}
	out, err = srv.Kubectl(t, kc, "get", "pods", "-n", "ns1", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "pod/p1" {
		t.Fatalf("kubectl get pods: %v\n%s", err, out)
	}
}
