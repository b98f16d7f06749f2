package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/seedf75a49c6/weave/test/k8s"
)

const manifest = "weave-daemonset-k8s.yaml"

// objects decodes every document of the manifest strictly (unknown or
// misspelt fields fail) into its k8s.io/api type, by kind.
func objects(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for i, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		obj := newObject(t, meta.Kind)
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("document %d (%s): strict decode: %v", i, meta.Kind, err)
		}
		if _, dup := out[meta.Kind]; dup {
			t.Fatalf("two documents of kind %s", meta.Kind)
		}
		out[meta.Kind] = obj
	}
	return out
}

func newObject(t *testing.T, kind string) any {
	switch kind {
	case "ServiceAccount":
		return &corev1.ServiceAccount{}
	case "ClusterRole":
		return &rbacv1.ClusterRole{}
	case "ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "Role":
		return &rbacv1.Role{}
	case "RoleBinding":
		return &rbacv1.RoleBinding{}
	case "DaemonSet":
		return &appsv1.DaemonSet{}
	}
	t.Fatalf("unexpected kind %q in %s", kind, manifest)
	return nil
}

// TestManifestDaemonSet: the DaemonSet has what a node agent for the pod
// network needs (host network, privileged, every taint tolerated, node
// critical, readiness on /status, rolling update, the host paths) and only
// environment variables weave-kube reads.
func TestManifestDaemonSet(t *testing.T) {
	ds := objects(t)["DaemonSet"].(*appsv1.DaemonSet)
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork || spec.PriorityClassName != "system-node-critical" || spec.ServiceAccountName != "weave-net" {
		t.Errorf("hostNetwork %v priorityClass %q serviceAccount %q", spec.HostNetwork, spec.PriorityClassName, spec.ServiceAccountName)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("update strategy %q, want RollingUpdate", ds.Spec.UpdateStrategy.Type)
	}
	for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		if !slices.ContainsFunc(spec.Tolerations, func(tl corev1.Toleration) bool {
			return tl.Effect == effect && tl.Operator == corev1.TolerationOpExists && tl.Key == ""
		}) {
			t.Errorf("no toleration of every %s taint", effect)
		}
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
			t.Errorf("container %s is not privileged", c.Name)
		}
		checkEnv(t, c)
	}
	weave := spec.Containers[0]
	probe := weave.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/status" || probe.HTTPGet.Port.IntValue() != 6784 {
		t.Errorf("readiness probe %+v, want GET /status on 6784", probe)
	}
	var paths []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			paths = append(paths, v.HostPath.Path)
		}
	}
	for _, want := range []string{"/var/lib/weave", "/opt/cni/bin", "/etc/cni/net.d", "/run/xtables.lock", "/lib/modules", "/etc/machine-id", "/var/lib/dbus"} {
		if !slices.Contains(paths, want) {
			t.Errorf("no hostPath volume for %s (have %v)", want, paths)
		}
	}
}

// knobs are the variables weave-kube (package kube and the weave CLI
// settings it shares) reads.
var knobs = []string{"HOSTNAME", "KUBE_PEERS", "IPALLOC_RANGE", "IPALLOC_INIT", "CONN_LIMIT", "HAIRPIN_MODE",
	"WEAVE_MTU", "WEAVE_PASSWORD", "WEAVE_PASSWORD_FILE", "NO_MASQ_LOCAL", "EXPECT_NPC", "EXTRA_ARGS",
	"WEAVE_METRICS_ADDR", "WEAVE_STATUS_ADDR", "WEAVE_EXPOSE_IP", "CHECKPOINT_DISABLE", "IPTABLES_BACKEND",
	"KUBECONFIG", "WEAVE_KUBE_RECLAIM_DELAY", "WEAVE_DATA_DIR", "WEAVE_RUN_DIR", "WEAVE_HTTP_ADDR", "WEAVE_PORT",
	"WEAVE_NO_FASTDP", "WEAVE_DEBUG"}

func checkEnv(t *testing.T, c corev1.Container) {
	t.Helper()
	var hostname bool
	for _, e := range c.Env {
		if !slices.Contains(knobs, e.Name) {
			t.Errorf("container %s sets %s, which weave-kube does not read", c.Name, e.Name)
		}
		if e.Name == "HOSTNAME" {
			hostname = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
		}
	}
	if !hostname {
		t.Errorf("container %s: HOSTNAME does not come from spec.nodeName", c.Name)
	}
}

// TestManifestRBACIsLeast: the roles grant exactly what weave-kube and
// weave-npc use.
func TestManifestRBACIsLeast(t *testing.T) {
	objs := objects(t)
	cr := objs["ClusterRole"].(*rbacv1.ClusterRole)
	role := objs["Role"].(*rbacv1.Role)
	var got []string
	for _, r := range append(cr.Rules, role.Rules...) {
		got = append(got, strings.Join(r.Resources, ",")+":"+strings.Join(r.ResourceNames, ",")+":"+strings.Join(r.Verbs, ","))
	}
	want := []string{"nodes::get,list,watch", "nodes/status::patch", "pods,namespaces::list,watch", "networkpolicies::list,watch",
		"configmaps:weave-net:get,update", "configmaps::create"}
	if !slices.Equal(got, want) {
		t.Errorf("rules = %v, want %v", got, want)
	}
}

// TestManifestServerDryRunAndPermissions: the real API server accepts the
// manifest (kubectl apply --dry-run=server), and once applied the
// ServiceAccount may do what the agent does and nothing more.
func TestManifestServerDryRunAndPermissions(t *testing.T) {
	srv := k8s.Start(t)
	kc := srv.WriteKubeconfig(t, srv.AdminConfig())
	if out, err := srv.Kubectl(t, kc, "apply", "--dry-run=server", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
	}
	if out, err := srv.Kubectl(t, kc, "apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	allowed := []authzv1.ResourceAttributes{
		{Verb: "watch", Resource: "nodes"}, {Verb: "list", Resource: "nodes"},
		{Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n1"},
		{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "weave-net"},
		{Verb: "update", Resource: "configmaps", Namespace: "kube-system", Name: "weave-net"},
		{Verb: "create", Resource: "configmaps", Namespace: "kube-system"},
		{Verb: "watch", Resource: "pods"}, {Verb: "list", Resource: "namespaces"},
		{Verb: "watch", Group: "networking.k8s.io", Resource: "networkpolicies"},
	}
	denied := []authzv1.ResourceAttributes{
		{Verb: "delete", Resource: "nodes", Name: "n1"}, {Verb: "update", Resource: "nodes", Name: "n1"},
		{Verb: "get", Resource: "secrets", Namespace: "kube-system", Name: "weave-passwd"},
		{Verb: "update", Resource: "configmaps", Namespace: "kube-system", Name: "kube-proxy"},
		{Verb: "create", Resource: "configmaps", Namespace: "default"},
		{Verb: "get", Resource: "pods", Namespace: "default", Name: "p"}, {Verb: "delete", Resource: "pods", Namespace: "default", Name: "p"},
		{Verb: "update", Group: "networking.k8s.io", Resource: "networkpolicies", Namespace: "default", Name: "np"},
	}
	for _, ra := range allowed {
		if !can(t, srv, ra) {
			t.Errorf("ServiceAccount weave-net may not %+v, which weave-kube needs", ra)
		}
	}
	for _, ra := range denied {
		if can(t, srv, ra) {
			t.Errorf("ServiceAccount weave-net may %+v, more than weave-kube needs", ra)
		}
	}
}

func can(t *testing.T, srv *k8s.Server, ra authzv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:kube-system:weave-net", ResourceAttributes: &ra,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
	}}
	res, err := srv.Admin(t).AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview %+v: %v", ra, err)
	}
	return res.Status.Allowed
}
