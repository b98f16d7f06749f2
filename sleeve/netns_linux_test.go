package sleeve

import (
	"bytes"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

func requireRoot(t *testing.T) {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip")
}

func runCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

// twoHosts creates two netns (netnstest.Namespaces: removed at cleanup,
// swept after a killed run), each with an eth0, joined by a 1500-byte
// veth, with 192.168.251.1 and .2.
func twoHosts(t *testing.T) (nsA, nsB string) {
	t.Helper()
	_, ns := netnstest.Namespaces(t, "a", "b")
	nsA, nsB = ns[0], ns[1]
	runCmd(t, "ip", "link", "add", "eth0", "mtu", "1500", "netns", nsA, "type", "veth",
		"peer", "name", "eth0", "mtu", "1500", "netns", nsB)
	for i, ns := range []string{nsA, nsB} {
		runCmd(t, "ip", "-n", ns, "addr", "add", "192.168.251."+string(rune('1'+i))+"/24", "dev", "eth0")
		runCmd(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	}
	return nsA, nsB
}

// overlayInNetns creates an overlay whose sockets live in netns ns
// (netns.Do: the sockets keep the namespace they were made in).
func overlayInNetns(t *testing.T, ns, host string, name mesh.PeerName, h router.FrameHandler, cfg Config) *Overlay {
	t.Helper()
	cfg.Host, cfg.LocalPeer, cfg.Handler, cfg.Logger = host, name, h, testLogger(t)
	var o *Overlay
	err := netns.Do(netnstest.NSPath(ns), func() (err error) {
		o, err = New(cfg)
		return err
	})
	if err != nil {
		t.Fatalf("overlay in %s: %v", ns, err)
	}
	t.Cleanup(o.Stop)
	return o
}

type netnsSetup struct {
	oa, ob   *Overlay
	fa, fb   router.Forwarder
	hb       *fakeHandler
	nsA, nsB string
}

// netnsPair connects A and B as a Weave 2.8.1 peer would (no features).
func netnsPair(t *testing.T, key *[32]byte, timing Timing) netnsSetup {
	return netnsPairFeatures(t, key, timing, false)
}

// netnsPairFeatures is netnsPair; with ours, each side sees the other's
// features as between two of our routers (jumbo framing, AEAD; segmented
// framing is declined, so these are the jumbo-framing tests).
func netnsPairFeatures(t *testing.T, key *[32]byte, timing Timing, ours bool) netnsSetup {
	return netnsPairConfig(t, key, Config{Timing: timing, NoSegments: true}, ours)
}

// netnsPairConfig is netnsPairFeatures with both overlays configured as cfg.
func netnsPairConfig(t *testing.T, key *[32]byte, cfg Config, ours bool) netnsSetup {
	t.Helper()
	nsA, nsB := twoHosts(t)
	hb := newFakeHandler()
	oa := overlayInNetns(t, nsA, "192.168.251.1", peerA, newFakeHandler(), cfg)
	ob := overlayInNetns(t, nsB, "192.168.251.2", peerB, hb, cfg)
	var featA, featB map[string]string
	if ours {
		featA, featB = overlayFeatures(oa), overlayFeatures(ob)
	}
	fa, fb := pairFeatures(t, oa, ob, key, featA, featB)
	// pair assumes loopback; point A at B's underlay address.
	ap := net.TCPAddr{IP: net.IPv4(192, 168, 251, 2), Port: ob.Port()}
	fa.(*forwarder).params.RemoteAddr = &ap
	fa.(*forwarder).remoteAddr.Store(ptr(ap.AddrPort()))
	return netnsSetup{oa: oa, ob: ob, fa: fa, fb: fb, hb: hb, nsA: nsA, nsB: nsB}
}

// linkCases are the two kinds of link over a 1500-byte underlay, with the
// overlay MTU discovery settles at.
var linkCases = []struct {
	name string
	key  *[32]byte
	mtu  int
}{{"plaintext", nil, 1438}, {"encrypted", &testKey, 1414}}

func TestNetnsPMTU(t *testing.T) {
	requireRoot(t)
	for _, tc := range linkCases {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			s := netnsPair(t, tc.key, fastTiming)
			oa, fa, fb := s.oa, s.fa, s.fb
			fa.Confirm()
			fb.Confirm()
			awaitClosed(t, fa.EstablishedChannel(), "A established")
			awaitMTU(t, fa, tc.mtu)
			awaitMTU(t, fb, tc.mtu)
			awaitStackFrag(t, oa, true)
			fa.Stop()
			fb.Stop()
		})
	}
}

// TestNetnsBinarySearchAndSelfFragmentation mirrors Weave's 105_frag_2:
// B drops UDP packets over 700 bytes, so A's probes vanish without ICMP,
// the search settles at 700-62 = 638, the fragmentation test fails and A
// fragments big non-DF packets itself.
func TestNetnsBinarySearchAndSelfFragmentation(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	timing := fastTiming
	timing.MTUVerifyAttempts = 3
	timing.MTUVerifyTimeout = 20 * time.Millisecond // a slow reply must not look like a lost probe
	timing.FragTestInterval = time.Hour
	s := netnsPair(t, nil, timing)
	oa, fa, fb, hb := s.oa, s.fa, s.fb, s.hb
	runCmd(t, "ip", "netns", "exec", s.nsB, "iptables", "-I", "INPUT", "-p", "udp",
		"-m", "length", "--length", "701:65535", "-j", "DROP")
	fa.Confirm()
	fb.Confirm()
	awaitClosed(t, fa.EstablishedChannel(), "A established")
	awaitMTU(t, fa, 638)
	if oa.Status().Peers[0].StackFrag {
		t.Fatal("fragmentation test must fail through the 700-byte filter")
	}
	big := ipv4Frame(2000, false, 0)
	if err := fa.Forward(peerA, peerB, big); err != nil {
		t.Fatalf("forward: %v", err)
	}
	var payload []byte
	for len(payload) < 1980 {
		fr := hb.await(t)
		if len(fr.frame) > 638+ethHeaderLen {
			t.Fatalf("fragment of %d bytes exceeds mtu 638", len(fr.frame))
		}
		payload = append(payload, fr.frame[ethHeaderLen+20:]...)
	}
	if string(payload) != string(big[ethHeaderLen+20:]) {
		t.Fatal("fragments do not carry the original payload in order")
	}
	fa.Stop()
	fb.Stop()
}

func awaitStackFrag(t *testing.T, o *Overlay, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for o.Status().Peers[0].StackFrag != want {
		if time.Now().After(deadline) {
			t.Fatalf("stackFrag never became %v; status %+v", want, o.Status())
		}
		time.Sleep(2 * time.Millisecond) // polling: no event for this state
	}
}

// TestNetnsPMTUShrinks lowers the underlay MTU after discovery settled: the
// next DF data send hits EMSGSIZE and discovery runs again.
func TestNetnsPMTUShrinks(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	s := netnsPair(t, nil, fastTiming)
	fa, fb := s.fa, s.fb
	fa.Confirm()
	fb.Confirm()
	awaitClosed(t, fa.EstablishedChannel(), "A established")
	awaitMTU(t, fa, 1438)
	runCmd(t, "ip", "-n", s.nsA, "link", "set", "eth0", "mtu", "1200") // twoHosts' veth
	// Fits the old MTU, not the new path: dropped, and rediscovery starts.
	if err := fa.Forward(peerA, peerB, ipv4Frame(1400, true, 0)); err != nil {
		t.Fatalf("forward: %v", err)
	}
	awaitMTU(t, fa, 1200-62)
	fa.Stop()
	fb.Stop()
}

func ptr[T any](v T) *T { return &v }

// TestNetnsJumboEncrypted: between two of our routers on a 1500-byte
// underlay, a 64 KiB frame crosses encrypted as one datagram that the
// underlay fragments and B's kernel reassembles.
func TestNetnsJumboEncrypted(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	s := netnsPairFeatures(t, &testKey, fastTiming, true)
	s.fa.Confirm()
	s.fb.Confirm()
	awaitClosed(t, s.fa.EstablishedChannel(), "A established")
	awaitJumbo(t, s.fa)
	reasm := reassembled(t, s.nsB)
	big := ipv4Frame(JumboMTU(true), true, 0)
	if err := s.fa.Forward(peerA, peerB, big); err != nil {
		t.Fatalf("forward 64 KiB frame: %v", err)
	}
	if got := s.hb.await(t); !bytes.Equal(got.frame, big) {
		t.Fatalf("B received %d bytes, want the %d-byte frame intact", len(got.frame), len(big))
	}
	if n := reassembled(t, s.nsB) - reasm; n < 1 {
		t.Fatalf("B's kernel reassembled %d datagrams, want the jumbo one", n)
	}
	st := s.oa.Status().Peers[0]
	if st.Cipher != bestCipher().String() || !st.Jumbo || st.MTU != JumboMTU(true) {
		t.Fatalf("A status %+v", st)
	}
	s.fa.Stop()
	s.fb.Stop()
}

// TestNetnsJumboNeedsFragmentation: when the underlay drops big UDP
// datagrams (Weave's 105_frag_2 filter), the fragmentation test fails and
// jumbo framing stays off even though both ends offer it.
func TestNetnsJumboNeedsFragmentation(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	timing := fastTiming
	timing.MTUVerifyAttempts = 3
	timing.MTUVerifyTimeout = 20 * time.Millisecond
	s := netnsPairFeatures(t, &testKey, timing, true)
	runCmd(t, "ip", "netns", "exec", s.nsB, "iptables", "-I", "INPUT", "-p", "udp",
		"-m", "length", "--length", "701:65535", "-j", "DROP")
	s.fa.Confirm()
	s.fb.Confirm()
	awaitClosed(t, s.fa.EstablishedChannel(), "A established")
	awaitMTU(t, s.fa, 700-86) // PMTU settled: the frag test reply had time to come
	if st := s.oa.Status().Peers[0]; st.Jumbo || !st.PeerJumbo {
		t.Fatalf("jumbo %v (peer offers %v): must stay off without fragmentation", st.Jumbo, st.PeerJumbo)
	}
	s.fa.Stop()
	s.fb.Stop()
}

// reassembled reads Ip ReasmOKs (IP datagrams reassembled) in ns.
func reassembled(t *testing.T, ns string) int { return netnstest.SNMPCounter(t, ns, "Ip", "ReasmOKs") }

// TestNetnsSegments: between two of our routers on a 1500-byte underlay, a
// 64 KiB frame crosses as path-MTU segments (one GSO send per run), with no
// IP fragment on the way: B's kernel reassembles nothing.
func TestNetnsSegments(t *testing.T) {
	requireRoot(t)
	for _, tc := range linkCases {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			s := netnsPairConfig(t, tc.key, Config{Timing: fastTiming}, true)
			s.fa.Confirm()
			s.fb.Confirm()
			awaitClosed(t, s.fa.EstablishedChannel(), "A established")
			awaitSegments(t, s.fa)
			reasm := reassembled(t, s.nsB)
			big := ipv4Frame(65535, true, 0)
			for range 3 {
				if err := s.fa.Forward(peerA, peerB, big); err != nil {
					t.Fatalf("forward 64 KiB frame: %v", err)
				}
				if got := s.hb.await(t); !bytes.Equal(got.frame, big) {
					t.Fatalf("B received %d bytes, want the %d-byte frame intact", len(got.frame), len(big))
				}
			}
			if n := reassembled(t, s.nsB) - reasm; n != 0 {
				t.Fatalf("B's kernel reassembled %d datagrams: segments must not fragment", n)
			}
			st := s.oa.Status().Peers[0]
			per := (65535 + ethHeaderLen + tc.mtu - 1) / (tc.mtu - segHeaderLen + FrameOverhead + ethHeaderLen)
			if int(st.Counters.Segments) < 3*per || st.Counters.Fragments != 0 || st.MTU != 65535 {
				t.Fatalf("A status %+v: want >= %d segments, no fragments", st, 3*per)
			}
			s.fa.Stop()
			s.fb.Stop()
		})
	}
}

// listenInNetns opens a UDP socket on addr inside netns ns.
func listenInNetns(t *testing.T, ns, addr string) *net.UDPConn {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	var c *net.UDPConn
	err = netns.Do(netnstest.NSPath(ns), func() (err error) {
		c, err = net.ListenUDP("udp4", a)
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBatchedRunOverMTUFallsBack: a run of datagrams longer than the
// underlay MTU (non-DF, which the kernel fragments) is refused as a GSO
// send (EMSGSIZE here; EINVAL on some kernels); its datagrams are then sent one by one and all arrive,
// later datagrams that long are not held at all, and shorter ones still
// leave as runs.
func TestBatchedRunOverMTUFallsBack(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	nsA, nsB := twoHosts(t)
	o := overlayInNetns(t, nsA, "192.168.251.1", peerA, newFakeHandler(), Config{Timing: fastTiming})
	sink := listenInNetns(t, nsB, "192.168.251.2:0")
	fw, err := o.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: peerB}, Outbound: true, ConnUID: 1,
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(192, 168, 251, 2), Port: sink.LocalAddr().(*net.UDPAddr).Port},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Stop()
	f := fw.(*forwarder)
	f.established.Store(true)
	f.mtu.Store(1400)
	read := sinkReader(t, sink, nil)
	frame := func(n int, tag byte) []byte { // not IPv4: the non-DF channel
		fr := make([]byte, n)
		copy(fr, testFrame)
		fr[n-1] = tag
		return fr
	}
	batch := func(n, size int, tag byte) {
		t.Helper()
		o.BeginBatch()
		for i := range n {
			if err := f.Forward(peerA, peerB, frame(size, tag+byte(i))); err != nil {
				t.Fatal(err)
			}
		}
		o.EndBatch()
		for i := range n {
			if _, got := read(); len(got) != size || got[size-1] != tag+byte(i) {
				t.Fatalf("size %d, datagram %d: got %d bytes, tag %d", size, i, len(got), got[len(got)-1])
			}
		}
	}
	batch(3, 2000, 10) // 2020-byte datagrams on a 1500-byte veth: refused, sent one by one
	if r := f.nonDFCh.run.maxSize; r == 0 || r >= 2000 {
		t.Fatalf("after the refusal datagrams up to %d bytes are held", r)
	}
	if f.o.batch.off.Load() {
		t.Fatal("an EINVAL refusal turned batching off for the whole overlay")
	}
	before := f.cnt.TxDatagrams.Load()
	batch(3, 2000, 20) // not held now: sent at once
	batch(5, 1200, 30) // fits the MTU: still a run
	if got := f.cnt.TxDatagrams.Load() - before; got != 8 {
		t.Errorf("TxDatagrams +%d, want 8", got)
	}
	if n := f.cnt.TxErrors.Load(); n != 0 {
		t.Errorf("TxErrors %d", n)
	}
}
