package main

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seedf75a49c6/weave/test/k8s"
)

// TestManifestAppliesOver281: `kubectl apply` of our manifest over 2.8.1's
// objects (same names; a DaemonSet's selector and a binding's roleRef
// cannot change) succeeds and turns 2.8.1's DaemonSet into ours in place:
// same selector, a rolling update, our image, and /var/lib/weave still at
// /weavedb, where 2.8.1's data file is adopted from.
func TestManifestAppliesOver281(t *testing.T) {
	srv := k8s.Start(t)
	kc := srv.WriteKubeconfig(t, srv.AdminConfig())
	if out, err := srv.Kubectl(t, kc, "apply", "-f", filepath.Join("testdata", "weave-2.8.1-daemonset.yaml")); err != nil {
		t.Fatalf("kubectl apply 2.8.1's objects: %v\n%s", err, out)
	}
	old, err := srv.Admin(t).AppsV1().DaemonSets("kube-system").Get(context.Background(), "weave-net", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := srv.Kubectl(t, kc, "apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply our manifest over 2.8.1's: %v\n%s", err, out)
	}
	ds, err := srv.Admin(t).AppsV1().DaemonSets("kube-system").Get(context.Background(), "weave-net", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.UID != old.UID {
		t.Errorf("the DaemonSet was recreated (uid %s, was %s): its pods would all go at once", ds.UID, old.UID)
	}
	if ds.Generation <= old.Generation || ds.Spec.UpdateStrategy.Type != "RollingUpdate" {
		t.Errorf("generation %d (was %d), strategy %s: want a rolling update of the new template", ds.Generation, old.Generation, ds.Spec.UpdateStrategy.Type)
	}
	weave := ds.Spec.Template.Spec.Containers[0]
	if weave.Image == old.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("container weave still runs %s", weave.Image)
	}
	mounted := false
	for _, m := range weave.VolumeMounts {
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == "/var/lib/weave" && m.MountPath == "/weavedb" {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("/var/lib/weave is not at /weavedb in container weave: 2.8.1's data file would not be found")
	}
}
