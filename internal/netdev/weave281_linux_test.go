//go:build linux

package netdev

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/vishvananda/netlink"
)

func mustRun(t *testing.T, nsPath string, args ...string) {
	t.Helper()
	if out, err := run(t, nsPath, args[0], args[1:]...); err != nil {
		t.Fatalf("%v: %v: %s", args, err, out)
	}
}

// host281 is a namespace laid out as Weave Net 2.8.1 leaves it: bridge,
// capture pair of the given bridge type, two containers with addresses on
// the bridge, and 2.8.1's iptables rules (--expect-npc, weave-npc's hooks).
type host281 struct {
	ns, bridge  string
	containers  [2]string // namespace names
	bridgeIndex int
}

func newHost281(t *testing.T, bridgeType string) *host281 {
	t.Helper()
	h := &host281{bridge: netns.RandomName("wb")}
	_, h.ns = netnstest.NewNS(t)
	netnstest.RequireBrNetfilter(t)
	mustRun(t, h.ns, "ip", "link", "add", h.bridge, "address", "aa:00:00:00:28:01", "type", "bridge")
	mustRun(t, h.ns, "ip", "link", "set", h.bridge, "mtu", "65535", "up")
	peer := "vethwe-pcap"
	if bridgeType == "bridged_fastdp" {
		peer = "vethwe-datapath" // its other end was a port of the ODP datapath
		mustRun(t, h.ns, "ip", "link", "add", Weave281VXLANPort, "type", "vxlan", "external", "dstport", "6784")
	}
	mustRun(t, h.ns, "ip", "link", "add", DefaultBridgeIface, "type", "veth", "peer", "name", peer)
	mustRun(t, h.ns, "ip", "link", "set", DefaultBridgeIface, "master", h.bridge, "up")
	mustRun(t, h.ns, "ip", "link", "set", peer, "up")
	for i := range h.containers {
		name, path := netnstest.NewNS(t)
		h.containers[i] = name
		host, cont := "vethwepl28"+strconv.Itoa(i), "vethwepg28"+strconv.Itoa(i)
		mustRun(t, h.ns, "ip", "link", "add", host, "type", "veth", "peer", "name", cont)
		mustRun(t, h.ns, "ip", "link", "set", cont, "netns", name)
		mustRun(t, h.ns, "ip", "link", "set", host, "master", h.bridge, "up")
		mustRun(t, path, "ip", "link", "set", cont, "name", "ethwe")
		mustRun(t, path, "ip", "addr", "add", "10.32.0."+strconv.Itoa(i+1)+"/12", "dev", "ethwe")
		mustRun(t, path, "ip", "link", "set", "ethwe", "up")
		mustRun(t, path, "ip", "link", "set", "lo", "up")
	}
	// Bridged frames go through iptables, as on a Kubernetes node.
	mustRun(t, h.ns, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
	rules, err := os.ReadFile(filepath.Join("testdata", "weave281-npc.rules"))
	if err != nil {
		t.Fatal(err)
	}
	restore := exec.Command("ip", "netns", "exec", filepath.Base(h.ns), "iptables-restore", "--noflush")
	restore.Stdin = strings.NewReader(strings.ReplaceAll(string(rules), "BRIDGE", h.bridge))
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("iptables-restore 2.8.1's rules: %v: %s", err, out)
	}
	h.bridgeIndex = link(t, h.ns, h.bridge).Attrs().Index
	return h
}

// forwardIndex is the position of line among the FORWARD rules (-1: absent).
func forwardIndex(dump, line string) int {
	i := 0
	for _, l := range strings.Split(dump, "\n") {
		if strings.HasPrefix(l, "-A FORWARD ") {
			if l == line {
				return i
			}
			i++
		}
	}
	return -1
}

var pingStats = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)

// TestAdoptWeave281Host: on a host as 2.8.1 left it (both bridge types),
// EnsureBridge keeps the bridge and the containers' veths and addresses,
// Ensure puts our ACCEPT rules ahead of 2.8.1's DROP, and AdoptWeave281Host
// removes 2.8.1's policy hooks, chains, mangle canary and VXLAN vport. A
// ping flood between the containers, established before the takeover,
// loses nothing; a new connection passes afterwards.
func TestAdoptWeave281Host(t *testing.T) {
	for _, bt := range []string{"bridge", "bridged_fastdp"} {
		t.Run(bt, func(t *testing.T) {
			h := newHost281(t, bt)
			// An established flow: echo requests every 10 ms from c0 to c1,
			// let in as 2.8.1's weave-npc would (here: by a rule removed
			// once its first replies are back); from then on conntrack
			// knows it and 2.8.1's WEAVE-NPC accepts it as established.
			mustRun(t, h.ns, "iptables", "-I", "FORWARD", "1", "-o", h.bridge, "-j", "ACCEPT")
			ping := exec.Command("ip", "netns", "exec", h.containers[0], "ping", "-n", "-q", "-i", "0.01", "-c", "300", "-W", "1", "10.32.0.2")
			var out strings.Builder
			ping.Stdout, ping.Stderr = &out, &out
			if err := ping.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ping.Process.Kill() })
			eventually(t, "the first echo replies", func() bool {
				return netnstest.SNMPCounter(t, h.containers[0], "Icmp", "InEchoReps") > 0
			})
			mustRun(t, h.ns, "iptables", "-D", "FORWARD", "-o", h.bridge, "-j", "ACCEPT")

			mac, _ := net.ParseMAC("aa:00:00:00:28:01")
			fw := NewFirewall(h.bridge, "")
			in(t, h.ns, func() error { return EnsureBridge(BridgeConfig{Name: h.bridge, MAC: mac, MTU: 65535}) })
			in(t, h.ns, fw.Ensure)
			dump := iptablesSave(t, h.ns)
			ours := "-A FORWARD -i " + h.bridge + " -o " + h.bridge + " -j ACCEPT"
			drop := "-A FORWARD -o " + h.bridge + " -j DROP"
			if a, b := forwardIndex(dump, ours), forwardIndex(dump, drop); a < 0 || b < 0 || a > b {
				t.Fatalf("our ACCEPT at %d, 2.8.1's DROP at %d: ours must come first\n%s", a, b, dump)
			}
			var removed []string
			in(t, h.ns, func() (err error) { removed, err = fw.AdoptWeave281Host(); return err })
			if err := ping.Wait(); err != nil {
				t.Fatalf("ping across the takeover: %v\n%s", err, out.String())
			}
			m := pingStats.FindStringSubmatch(out.String())
			if m == nil || m[1] != m[2] {
				t.Fatalf("established flow lost packets across the takeover: %s", out.String())
			}
			t.Logf("%s: %s/%s echo requests answered across the takeover", bt, m[2], m[1])

			dump = iptablesSave(t, h.ns)
			for _, gone := range []string{"WEAVE-NPC", "NFLOG", drop, "*mangle"} {
				if strings.Contains(dump, gone) {
					t.Errorf("%q still there after the takeover:\n%s", gone, dump)
				}
			}
			for _, kept := range []string{ours, "-A FORWARD -o " + h.bridge + " -j WEAVE-EXPOSE",
				"Block non-local access to Weave Net control port", "-A POSTROUTING -j WEAVE"} {
				if !strings.Contains(dump, kept) {
					t.Errorf("%q missing after the takeover:\n%s", kept, dump)
				}
			}
			if len(removed) < 6 {
				t.Errorf("removed %v", removed)
			}
			if l := link(t, h.ns, h.bridge); l.Attrs().Index != h.bridgeIndex {
				t.Errorf("bridge recreated: index %d, was %d", l.Attrs().Index, h.bridgeIndex)
			}
			for i := range h.containers {
				port := link(t, h.ns, "vethwepl28"+strconv.Itoa(i))
				if port.Attrs().MasterIndex != h.bridgeIndex {
					t.Errorf("container veth %s left the bridge", port.Attrs().Name)
				}
			}
			names := strings.Join(linkNames(t, h.ns), " ")
			for _, gone := range []string{"vethwe-datapath", Weave281VXLANPort} {
				if strings.Contains(names, gone) {
					t.Errorf("%s still there: %s", gone, names)
				}
			}
			if _, ok := link(t, h.ns, DefaultPcapIface).(*netlink.Veth); !ok {
				t.Errorf("no capture veth %s: %s", DefaultPcapIface, names)
			}
			// A new connection passes now (2.8.1's DROP is gone).
			if o, err := run(t, "/var/run/netns/"+h.containers[1], "ping", "-n", "-c", "1", "-W", "2", "10.32.0.1"); err != nil {
				t.Errorf("new flow after the takeover: %v: %s", err, o)
			}
			var again []string
			in(t, h.ns, func() (err error) { again, err = fw.AdoptWeave281Host(); return err })
			if len(again) != 0 {
				t.Errorf("second takeover removed %v", again)
			}
		})
	}
}

func TestSplitRule(t *testing.T) {
	got := splitRule(`-A FORWARD -i weave -m comment --comment "NOTE: this must go before \'-j KUBE-FORWARD\'" -j WEAVE-NPC-EGRESS`)
	want := []string{"-A", "FORWARD", "-i", "weave", "-m", "comment", "--comment", "NOTE: this must go before '-j KUBE-FORWARD'", "-j", "WEAVE-NPC-EGRESS"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
}
