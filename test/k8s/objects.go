package k8s

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreateNode registers Node name with InternalIP internalIP (if not "")
// and condition Ready=True, as a kubelet would, and returns it as stored.
func (s *Server) CreateNode(t testing.TB, name, internalIP string) *corev1.Node {
	t.Helper()
	admin := s.Admin(t)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	created, err := admin.CoreV1().Nodes().Create(ctx(t), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Node %s: %v", name, err)
	}
	created.Status = nodeStatus(internalIP)
	updated, err := admin.CoreV1().Nodes().UpdateStatus(ctx(t), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("write status of Node %s: %v", name, err)
	}
	return updated
}

func nodeStatus(internalIP string) corev1.NodeStatus {
	st := corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	if internalIP != "" {
		st.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internalIP}}
	}
	return st
}

// DeleteNode deletes Node name, as when a node is removed from the cluster.
func (s *Server) DeleteNode(t testing.TB, name string) {
	t.Helper()
	if err := s.Admin(t).CoreV1().Nodes().Delete(ctx(t), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Node %s: %v", name, err)
	}
}

// CreatePod creates a running Pod ns/name bound to node (as the scheduler
// would) with the given labels, and, when podIP is not "", writes
// status.podIP as the kubelet would once the CNI plugin gave it one.
func (s *Server) CreatePod(t testing.TB, ns, name, node string, labels map[string]string, podIP string) *corev1.Pod {
	t.Helper()
	s.CreateNamespace(t, ns)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	created, err := s.Admin(t).CoreV1().Pods(ns).Create(ctx(t), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Pod %s/%s: %v", ns, name, err)
	}
	if podIP == "" {
		return created
	}
	return s.SetPodIP(t, created, podIP)
}

// SetPodIP marks pod Running with status.podIP(s) = ip.
func (s *Server) SetPodIP(t testing.TB, pod *corev1.Pod, ip string) *corev1.Pod {
	t.Helper()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	pod.Status.HostIP = ""
	updated, err := s.Admin(t).CoreV1().Pods(pod.Namespace).UpdateStatus(ctx(t), pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("write status.podIP of Pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return updated
}
