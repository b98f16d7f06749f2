package linkstate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/linkstate"
	"github.com/seedf75a49c6/weave/test/meshsim"
)

// TestSummaryCrossesA2_8_1Peer: in a chain p0 - p1 - p2 where p1 has no
// linkstate gossiper (as a Weave 2.8.1 router has none), p0's summary
// still reaches p2 (mesh's surrogate on p1 relays the broadcast), and p1
// keeps working: its topology and routes are unaffected.
func TestSummaryCrossesA2_8_1Peer(t *testing.T) {
	s := meshsim.New(t, 3, meshsim.Options{})
	tables := map[int]*linkstate.Table{}
	for _, i := range []int{0, 2} {
		tb := linkstate.New(s.Peers[i].Name)
		g, err := s.Peers[i].Mesh.NewGossip(linkstate.ChannelName, tb)
		if err != nil {
			t.Fatal(err)
		}
		tb.SetGossip(g)
		tables[i] = tb
	}
	s.Connect(t, 0, 1)
	s.Connect(t, 1, 2)
	s.AwaitConverged(t)
	own := linkstate.Summary{NickName: "p0", Links: []linkstate.Link{
		{Peer: s.Peers[1].Name.String(), State: "established", Overlay: "sleeve", MTU: 1376, Fallback: "fastdp: no heartbeat"},
	}}
	if !tables[0].SetOwn(own) {
		t.Fatal("first SetOwn did not broadcast")
	}
	awaitSummary(t, tables[2], s.Peers[0].Name.String(), func(got linkstate.Summary) error {
		if len(got.Links) != 1 || got.Links[0].Fallback != "fastdp: no heartbeat" || got.Links[0].MTU != 1376 {
			return fmt.Errorf("p2 has %+v", got)
		}
		return nil
	})
	if _, ok := s.Peers[1].Mesh.Routes.Unicast(s.Peers[2].Name); !ok {
		t.Fatal("p1 lost its route to p2")
	}
}

func awaitSummary(t *testing.T, tb *linkstate.Table, peer string, check func(linkstate.Summary) error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ch := tb.Changed()
		s, ok := tb.All()[peer]
		err := fmt.Errorf("no summary of %s", peer)
		if ok {
			err = check(s)
		}
		if err == nil {
			return
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("summary of %s: %v", peer, err)
		}
	}
}

// TestSetOwnRateAndBounds: a second summary within MinInterval is not
// sent, unchanged facts wait for Refresh, and links beyond MaxLinks and
// long strings are cut.
func TestSetOwnRateAndBounds(t *testing.T) {
	s := meshsim.New(t, 1, meshsim.Options{})
	tb := linkstate.New(s.Peers[0].Name)
	var links []linkstate.Link
	for i := range linkstate.MaxLinks + 5 {
		links = append(links, linkstate.Link{Peer: fmt.Sprintf("aa:00:00:00:%02x:%02x", i/256, i%256),
			State: "established", Fallback: strings.Repeat("x", 500)})
	}
	if !tb.SetOwn(linkstate.Summary{Links: links}) {
		t.Fatal("first SetOwn did not send")
	}
	if tb.SetOwn(linkstate.Summary{Links: links[:1]}) {
		t.Fatal("second SetOwn within MinInterval sent")
	}
	got := tb.All()[s.Peers[0].Name.String()]
	if len(got.Links) != linkstate.MaxLinks || got.Truncated != 5 {
		t.Fatalf("kept %d links, truncated %d; want %d and 5", len(got.Links), got.Truncated, linkstate.MaxLinks)
	}
	if n := len(got.Links[0].Fallback); n != linkstate.MaxString {
		t.Fatalf("fallback of %d bytes kept, want %d", n, linkstate.MaxString)
	}
	if size := len(linkstate.Encode(tb.All())); size > 32<<10 {
		t.Fatalf("a full summary encodes to %d bytes, want <= 32 KiB", size)
	}
}

// TestDecodeRejectsJunk: malformed, oversized or nameless messages are
// errors, not panics or entries.
func TestDecodeRejectsJunk(t *testing.T) {
	for name, msg := range map[string]string{
		"not json":  "\x00\x01",
		"object":    `{"peer":"aa:00:00:00:00:01"}`,
		"no name":   `[{"v":1,"links":[]}]`,
		"bad name":  `[{"peer":"zz","v":1}]`,
		"oversized": "[" + strings.Repeat(" ", linkstate.MaxMessage) + "]",
	} {
		if _, err := linkstate.Decode([]byte(msg)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	sums, err := linkstate.Decode([]byte(`[{"peer":"aa:00:00:00:00:02","v":3,"links":[{"p":"aa:00:00:00:00:01","s":"established","o":"fastdp"}]}]`))
	if err != nil || sums["aa:00:00:00:00:02"].Links[0].Overlay != "fastdp" {
		t.Fatalf("valid message: %v %+v", err, sums)
	}
}

// TestMergeKeepsNewest: an older version of a summary does not replace a
// newer one, and nobody else may set our own.
func TestMergeKeepsNewest(t *testing.T) {
	s := meshsim.New(t, 1, meshsim.Options{})
	tb := linkstate.New(s.Peers[0].Name)
	msg := func(peer string, v int, state string) []byte {
		return fmt.Appendf(nil, `[{"peer":%q,"v":%d,"links":[{"p":"aa:00:00:00:00:09","s":%q}]}]`, peer, v, state)
	}
	other := "aa:00:00:00:00:02"
	for _, m := range [][]byte{msg(other, 5, "established"), msg(other, 4, "failed"), msg(s.Peers[0].Name.String(), 9, "failed")} {
		if _, err := tb.OnGossip(m); err != nil {
			t.Fatal(err)
		}
	}
	all := tb.All()
	if got := all[other].Links[0].State; got != "established" {
		t.Fatalf("older summary replaced the newer: state %q", got)
	}
	if _, ok := all[s.Peers[0].Name.String()]; ok {
		t.Fatal("a received summary was taken as our own")
	}
}
