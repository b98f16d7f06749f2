package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/ipam"
)

// node281 is one of testdata/weave-2.8.1's routers: its data file, bridge
// type and iptables rules, and the containers it had (ID -> address).
type node281 struct {
	file, peer, nick, bridgeType, rules string
	mtu                                 string
	containers                          []container281
}

type container281 struct{ id, cidr string }

var nodes281 = []node281{
	{"node1-weave-netdata.db", "aa:00:00:00:28:01", "node1", "bridge", "plain.rules", "65535",
		[]container281{{"c1a", "10.32.0.1/12"}, {"c1b", "10.32.0.2/12"}, {"c1c", "10.32.0.3/12"}}},
	{"node2-weave-netdata.db", "aa:00:00:00:28:02", "node2", "bridged_fastdp", "npc.rules", "1376",
		[]container281{{"c2a", "10.40.0.0/12"}, {"c2b", "10.40.0.1/12"}, {"c2c", "10.40.0.100/12"}}},
}

// build281Host lays host h out as Weave Net 2.8.1 leaves it when its pod
// or container stops: its data file where its DaemonSet keeps it
// (<data dir>/weave-netdata.db), the bridge weave with the peer name as
// MAC, the capture pair of its bridge type, its containers' veths with
// their addresses, its iptables rules. It returns the container namespaces.
func build281Host(t *testing.T, h *netnstest.Host, n node281) map[string]string {
	t.Helper()
	netnstest.RequireBrNetfilter(t)
	data, err := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", n.file))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.DataDir, "weave-netdata.db"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sh := func(args ...string) {
		t.Helper()
		if out, err := netnstest.Output(h.NS, args...); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	sh("ip", "link", "add", "weave", "address", n.peer, "mtu", n.mtu, "type", "bridge")
	sh("ip", "link", "set", "weave", "up")
	peer := "vethwe-pcap"
	if n.bridgeType == "bridged_fastdp" {
		peer = "vethwe-datapath"
		sh("ip", "link", "add", "vxlan-6784", "type", "vxlan", "external", "dstport", "6784")
	}
	sh("ip", "link", "add", "vethwe-bridge", "mtu", n.mtu, "type", "veth", "peer", "name", peer, "mtu", n.mtu)
	sh("ip", "link", "set", "vethwe-bridge", "master", "weave", "up")
	sh("ip", "link", "set", peer, "up")
	sh("sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
	ns := map[string]string{}
	for _, c := range n.containers {
		name, _ := netnstest.NewNS(t)
		ns[c.id] = name
		host, cont := "vethwepl"+c.id, "vethwepg"+c.id
		sh("ip", "link", "add", host, "mtu", n.mtu, "type", "veth", "peer", "name", cont, "mtu", n.mtu)
		sh("ip", "link", "set", cont, "netns", name)
		sh("ip", "link", "set", host, "master", "weave", "up")
		for _, args := range [][]string{
			{"ip", "link", "set", cont, "name", "ethwe"},
			{"ip", "addr", "add", c.cidr, "dev", "ethwe"},
			{"ip", "link", "set", "ethwe", "up"},
		} {
			if out, err := netnstest.Output(name, args...); err != nil {
				t.Fatalf("%s in %s: %v: %s", strings.Join(args, " "), c.id, err, out)
			}
		}
	}
	rules, err := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", n.rules))
	if err != nil {
		t.Fatal(err)
	}
	restore := exec.Command("ip", "netns", "exec", h.NS, "iptables-restore", "--noflush")
	restore.Stdin = strings.NewReader(strings.ReplaceAll(string(rules), "BRIDGE", "weave"))
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("iptables-restore on %s: %v: %s", h.Name, err, out)
	}
	return ns
}

var pingCounts = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)

// pingLoss starts a ping every 10 ms from ns to ip for count packets.
func pingFlood(tp *netnstest.Topology, ns, ip string, count int) *netnstest.Proc {
	return tp.Start(ns, "ping", "-n", "-q", "-i", "0.01", "-W", "1", "-c", strconv.Itoa(count), ip)
}

// lost waits for a pingFlood and returns (sent, lost).
func lost(t *testing.T, p *netnstest.Proc, what string) (int, int) {
	t.Helper()
	_ = p.Wait(2 * time.Minute) // exit status 1 when some were lost
	m := pingCounts.FindStringSubmatch(p.Stdout())
	if m == nil {
		t.Fatalf("%s: no ping summary: %s %s", what, p.Stdout(), p.Stderr())
	}
	sent, _ := strconv.Atoi(m[1])
	got, _ := strconv.Atoi(m[2])
	return sent, sent - got
}

// TestUpgradeFrom281InPlace: two hosts as Weave Net 2.8.1 left them (its
// data files from two real routers, its bridge of both types, containers
// with their addresses, its iptables chains) get our router, launched
// without --name. Each keeps 2.8.1's peer name and ring entries, answers
// GET /ip/<container> with the old addresses, the containers ping across
// hosts, new allocations never repeat an adopted address, 2.8.1's policy
// chains are gone, and traffic between a host's containers loses nothing
// during the switch. Then a restart of h1's router, with a ping running
// from h1 to h2, measures what the switch costs cross-host; and h1's file,
// read as 2.8.1 reads it, holds every address we handed out (rollback).
// A corrupt 2.8.1 file stops the launch with an error naming it.
func TestUpgradeFrom281InPlace(t *testing.T) {
	ic := newIPAMCluster(t, 3, "10.32.0.0/12")
	tp := ic.tp
	conts := make([]map[string]string, 2)
	for i, n := range nodes281 {
		conts[i] = build281Host(t, ic.host(i+1), n)
	}
	// Traffic on each host's bridge, established before the switch. h2's
	// 2.8.1 rules drop new connections no policy allows; a rule standing in
	// for weave-npc's policy lets the flow start, and goes once it is
	// tracked (established flows pass 2.8.1's WEAVE-NPC from then on).
	allow := []string{"FORWARD", "-o", "weave", "-j", "ACCEPT"}
	if out, err := netnstest.Output(ic.host(2).NS, append([]string{"iptables", "-I"}, allow...)...); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	local := []*netnstest.Proc{
		pingFlood(tp, conts[0]["c1a"], "10.32.0.2", 1000),
		pingFlood(tp, conts[1]["c2a"], "10.40.0.1", 1000),
	}
	netnstest.WaitFor(t, 10*time.Second, "h2's local flow to start", func() error {
		if netnstest.SNMPCounter(t, conts[1]["c2a"], "Icmp", "InEchoReps") == 0 {
			return fmt.Errorf("no echo reply yet")
		}
		return nil
	})
	if out, err := netnstest.Output(ic.host(2).NS, append([]string{"iptables", "-D"}, allow...)...); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	launch := func(i int, peers ...string) string {
		t.Helper()
		args := []string{"--nickname", nodes281[i-1].nick, "--ipalloc-range", "10.32.0.0/12"}
		if i == 1 {
			args = append(args, "--no-fastdp") // 2.8.1's bridge type "bridge": sleeve only
		}
		if i == 2 {
			peers = append(peers, ic.host(1).IP)
		}
		args = append(args, peers...)
		name, err := tp.StartRouter(ic.host(i), args...)
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(ic.host(i).RunDir, "weaver.log"))
			t.Fatalf("launch on h%d: %v\n%s", i, err, log)
		}
		return name
	}
	for i, n := range nodes281 {
		if name := launch(i + 1); name != n.peer {
			t.Fatalf("h%d runs as %s, want 2.8.1's peer name %s", i+1, name, n.peer)
		}
		log, _ := os.ReadFile(filepath.Join(ic.host(i+1).RunDir, "weaver.log"))
		for _, want := range []string{"adopting Weave Net 2.8.1's data file", "ring-entries=2", "containers=3"} {
			if !strings.Contains(string(log), want) {
				t.Errorf("h%d's log lacks %q:\n%s", i+1, want, log)
			}
		}
	}
	for i, p := range local {
		select {
		case <-p.Done():
			t.Errorf("h%d's local flood ended before both switches were done: it proves nothing", i+1)
		default:
		}
	}
	for i, p := range local {
		if sent, n := lost(t, p, "local"); n != 0 {
			t.Errorf("h%d: %d of %d packets between its containers lost during the switch", i+1, n, sent)
		} else {
			t.Logf("h%d: 0 of %d packets between its containers lost during the switch (10 ms apart)", i+1, sent)
		}
	}

	// Same ring entries: `weave status ipam` says what 2.8.1's said, byte
	// for byte, once the nicknames have been gossiped.
	for i, n := range nodes281 {
		want, err := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", n.nick+"-status-ipam.txt"))
		if err != nil {
			t.Fatal(err)
		}
		netnstest.WaitFor(t, 30*time.Second, fmt.Sprintf("h%d's ring as 2.8.1 showed it", i+1), func() error {
			if got := ic.weave(i+1, "status", "ipam"); got != string(want) {
				return fmt.Errorf("weave status ipam:\n%s\nwant (2.8.1's):\n%s", got, want)
			}
			return nil
		})
	}
	// The old addresses, from the adopted files.
	for i, n := range nodes281 {
		for _, c := range n.containers {
			code, body, err := ic.routerGET(i+1, "/ip/"+c.id)
			if err != nil || code != 200 || body != c.cidr {
				t.Errorf("h%d GET /ip/%s: %d %q %v; want %s", i+1, c.id, code, body, err, c.cidr)
			}
		}
	}
	// 2.8.1's policy chains and vport are gone; our rules are in.
	dump, _ := netnstest.Output(ic.host(2).NS, "iptables-save")
	for _, gone := range []string{"WEAVE-NPC", "NFLOG", "-A FORWARD -o weave -j DROP"} {
		if strings.Contains(dump, gone) {
			t.Errorf("h2 still has %q:\n%s", gone, dump)
		}
	}
	if out, err := netnstest.Output(ic.host(2).NS, "ip", "link", "show", "vxlan-6784"); err == nil {
		t.Errorf("2.8.1's vxlan-6784 still on h2: %s", out)
	}
	// Containers talk across hosts through the new routers.
	waitPingIP(t, conts[0]["c1b"], "c1b -> c2c", "10.40.0.100")
	waitPingIP(t, conts[1]["c2b"], "c2b -> c1c", "10.32.0.3")
	// New allocations never repeat an adopted address.
	adopted := map[string]bool{}
	for _, n := range nodes281 {
		for _, c := range n.containers {
			adopted[c.cidr] = true
		}
	}
	ours := map[string]bool{}
	for i := 1; i <= 2; i++ {
		for j := range 4 {
			id := fmt.Sprintf("new%d-%d", i, j)
			addr := ic.allocateHTTP(i, id)
			if adopted[addr+"/12"] || adopted[addr] || ours[addr] {
				t.Errorf("h%d gave %s to %s: already in use", i, addr, id)
			}
			ours[addr] = true
		}
	}

	// The switch cross-host: restart h1's router (the pod's restart) with
	// a ping running from h2's container to h1's. Like weave-kube, the
	// relaunched router dials its peers itself.
	flood := pingFlood(tp, conts[1]["c2c"], "10.32.0.1", 3000)
	netnstest.WaitFor(t, 10*time.Second, "the cross-host flood to flow", func() error {
		if netnstest.SNMPCounter(t, conts[1]["c2c"], "Icmp", "InEchoReps") < 50 {
			return fmt.Errorf("fewer than 50 replies")
		}
		return nil
	})
	ic.weave(1, "stop")
	start := time.Now()
	launch(1, ic.host(2).IP)
	relaunch := time.Since(start)
	sent, n := lost(t, flood, "cross-host")
	t.Logf("router switch on h1 (weave stop; weave launch: %v): %d of %d echo requests lost from h2 to h1 (10 ms apart: ~%d ms without traffic)",
		relaunch.Round(time.Millisecond), n, sent, n*10)
	if n > 1000 {
		t.Errorf("lost %d packets (%d s) across the switch", n, n/100)
	}
	if code, body, _ := ic.routerGET(1, "/ip/c1a"); body != "10.32.0.1/12" {
		t.Errorf("after the restart GET /ip/c1a: %d %q", code, body)
	}

	// Rollback: h1's file, as 2.8.1 would find it, holds every address.
	ic.weave(1, "stop")
	if _, err := os.Stat(filepath.Join(ic.host(1).DataDir, "weavedata.db")); err == nil {
		t.Error("a second IPAM database was created beside 2.8.1's")
	}
	p, err := ipam.ReadWeaveDataFile(filepath.Join(ic.host(1).DataDir, "weave-netdata.db"))
	if err != nil {
		t.Fatal(err)
	}
	inFile := map[string]bool{}
	for _, od := range p.Owned {
		for _, c := range od.Cidrs {
			inFile[c.Addr.String()] = true
		}
	}
	for j := range 4 {
		id := fmt.Sprintf("new1-%d", j)
		if len(p.Owned[id].Cidrs) != 1 {
			t.Errorf("2.8.1's file lacks %s: %v", id, p.Owned)
		}
	}
	for _, c := range nodes281[0].containers {
		if len(p.Owned[c.id].Cidrs) != 1 || p.Owned[c.id].Cidrs[0].String() != c.cidr {
			t.Errorf("2.8.1's file: %s = %v, want %s", c.id, p.Owned[c.id], c.cidr)
		}
	}
	if p.PeerName.String() != nodes281[0].peer {
		t.Errorf("file's peer %s", p.PeerName)
	}

	// A corrupt 2.8.1 file: the launch fails naming it.
	h3 := ic.host(3)
	path := filepath.Join(h3.DataDir, "weave-netdata.db")
	data, _ := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", nodes281[0].file))
	if err := os.WriteFile(path, data[:8192], 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := tp.Weave(h3, "launch", "--ipalloc-range", "10.32.0.0/12", "--no-fastdp")
	log, _ := os.ReadFile(filepath.Join(h3.RunDir, "weaver.log"))
	if err == nil || !strings.Contains(err.Error()+out+string(log), path) {
		t.Errorf("launch on a truncated 2.8.1 file: %v %s; want an error naming %s\n%s", err, out, path, log)
	}
}
