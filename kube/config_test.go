package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigDefaultsAre281s(t *testing.T) {
	c, err := ConfigFromEnv(env(map[string]string{"HOSTNAME": "node1", "WEAVE_PASSWORD_FILE": ""}))
	if err != nil {
		t.Fatal(err)
	}
	if c.IPAllocRange.String() != "10.32.0.0/12" || c.ConnLimit != 200 || !c.NoMasqLocal || !c.ExpectNPC || !c.HairpinMode ||
		c.MetricsAddr != "0.0.0.0:6782" || c.KubePeers != nil || c.NodeName != "node1" {
		t.Fatalf("defaults = %+v", c)
	}
	got := strings.Join(c.WeaverFlags([]string{"10.0.0.2", "10.0.0.3"}, 3), " ")
	want := "--nickname=node1 --ipalloc-range=10.32.0.0/12 --ipalloc-init=consensus=3 --conn-limit=200 --docker-api= --no-dns " +
		"--metrics-addr=0.0.0.0:6782 --expect-npc --no-masq-local 10.0.0.2 10.0.0.3"
	if got != want {
		t.Fatalf("weaver flags =\n %s\nwant\n %s", got, want)
	}
}

func TestConfigKnobs(t *testing.T) {
	c, err := ConfigFromEnv(env(map[string]string{
		"HOSTNAME": "n", "KUBE_PEERS": "10.0.0.1, 10.0.0.2 node3.example:6783", "IPALLOC_RANGE": "10.40.0.0/16",
		"IPALLOC_INIT": "seed=aa:00:00:00:00:01", "CONN_LIMIT": "0", "HAIRPIN_MODE": "false", "WEAVE_MTU": "1376",
		"NO_MASQ_LOCAL": "0", "EXPECT_NPC": "0", "EXTRA_ARGS": "--log-level=debug  --trusted-subnets=10.1.0.0/16",
		"WEAVE_STATUS_ADDR": "127.0.0.1:6782", "WEAVE_EXPOSE_IP": "10.40.0.1/16", "IPTABLES_BACKEND": "legacy",
		"WEAVE_PASSWORD": "s3cret",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.KubePeers, ",") != "10.0.0.1,10.0.0.2,node3.example:6783" || c.MTU != 1376 || c.Password != "s3cret" ||
		c.Backend != "legacy" || c.HairpinMode || c.NoMasqLocal || c.ExpectNPC || len(c.ExtraArgs) != 2 {
		t.Fatalf("config = %+v", c)
	}
	got := strings.Join(c.WeaverFlags(nil, 1), " ")
	if !strings.Contains(got, "--ipalloc-init=seed=aa:00:00:00:00:01 --conn-limit=0") || strings.Contains(got, "npc") ||
		!strings.HasSuffix(got, "--status-addr=127.0.0.1:6782 --log-level=debug --trusted-subnets=10.1.0.0/16") {
		t.Fatalf("weaver flags = %s", got)
	}
	if w := c.weaverCLI(); w.MTU != "1376" {
		t.Fatalf("weaver MTU %q, want 1376 passed the way weave launch passes it", w.MTU)
	}
}

// TestConfigErrorsNameEveryBadVariable: one error per bad knob, each
// naming the variable and the value.
func TestConfigErrorsNameEveryBadVariable(t *testing.T) {
	bad := map[string]string{
		"IPALLOC_RANGE": "10.32.0.1/12", "IPALLOC_INIT": "consensus=zero", "CONN_LIMIT": "-1", "HAIRPIN_MODE": "maybe",
		"WEAVE_MTU": "9", "NO_MASQ_LOCAL": "yes please", "WEAVE_METRICS_ADDR": "6782", "KUBE_PEERS": "10.0.0.1 bad_host!",
		"IPTABLES_BACKEND": "nftables", "WEAVE_EXPOSE_IP": "10.32.0.1", "WEAVE_KUBE_RECLAIM_DELAY": "soon",
	}
	m := map[string]string{}
	for k, v := range bad {
		m[k] = v
	}
	_, err := ConfigFromEnv(env(m)) // and no HOSTNAME
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for k, v := range bad {
		if k == "KUBE_PEERS" {
			v = "bad_host!" // the bad element is named, not the whole list
		}
		if !strings.Contains(msg, k) || !strings.Contains(msg, v) {
			t.Errorf("error does not name %s=%q:\n%s", k, v, msg)
		}
	}
	if !strings.Contains(msg, "HOSTNAME is empty") || !strings.Contains(msg, "did you mean 10.32.0.0/12") {
		t.Errorf("error lacks the HOSTNAME or the network-address hint:\n%s", msg)
	}
}

func TestPasswordFromSecretFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "weave-passwd")
	if err := os.WriteFile(path, []byte("from-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ConfigFromEnv(env(map[string]string{"HOSTNAME": "n", "WEAVE_PASSWORD_FILE": path}))
	if err != nil || c.Password != "from-secret" {
		t.Fatalf("password %q, %v", c.Password, err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ConfigFromEnv(env(map[string]string{"HOSTNAME": "n", "WEAVE_PASSWORD_FILE": path})); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty password file: err = %v", err)
	}
	_, err = ConfigFromEnv(env(map[string]string{"HOSTNAME": "n", "WEAVE_PASSWORD_FILE": filepath.Join(dir, "missing")}))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing explicit password file: err = %v", err)
	}
}

func node(name string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

func TestPeersFromNodes(t *testing.T) {
	nodes := []*corev1.Node{
		node("a", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}),
		node("b", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "1.2.3.5"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "b"}),
		node("c", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::3"}),
		node("me", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}),
	}
	s := PeersFromNodes(nodes, func(a string) bool { return a == "10.0.0.9" })
	if strings.Join(s.All, " ") != "1.2.3.5 10.0.0.1 10.0.0.9" || strings.Join(s.Others, " ") != "1.2.3.5 10.0.0.1" {
		t.Fatalf("peers = %+v", s)
	}
}
