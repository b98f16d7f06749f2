//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/ring/ringcheck"
	"github.com/weaveworks/mesh"
)

// TestIPAMHostsRunOutInTurn: three routers each allocate past their
// consensus share in turn, so each gets space donated by peers that hold
// nothing in the part they keep (the exchange that made Weave 2.8.1 drop
// the connection for good). The mesh must never drop a connection, every
// allocation must be distinct, and every ring a router reports must merge
// into every other under 2.8.1's strict rules.
func TestIPAMHostsRunOutInTurn(t *testing.T) {
	t.Parallel()
	ic := newIPAMCluster(t, 3, "10.44.0.0/25")
	for i := 1; i <= 3; i++ {
		ic.launch(i)
	}
	got := map[string]string{} // address -> who holds it
	var hist ringcheck.History
	shares := map[int][]address.Range{}
	for i := 1; i <= 3; i++ {
		outside := 0
		for n := 0; outside < 2; n++ {
			id := fmt.Sprintf("h%d-c%d", i, n)
			ip := ic.allocateHTTP(i, id)
			if other, dup := got[ip]; dup {
				t.Fatalf("%s got %s, already given to %s", id, ip, other)
			}
			got[ip] = id
			if n == 0 {
				shares[i] = ic.ownedRanges(i) // its space before it asks for more
			}
			if !inRanges(shares[i], ip) {
				outside++
				t.Logf("%s got %s from donated space", id, ip)
			}
		}
		ic.checkStrictRings(t, &hist)
	}
	t.Logf("%d distinct allocations", len(got))
	for i := 1; i <= 3; i++ {
		if n := ic.terminations(i); n != 0 {
			t.Fatalf("h%d counts %d connection terminations", i, n)
		}
	}
	ic.checkSemanticVersion(t)
	c1, c3 := ic.attachAuto(1, "c1"), ic.attachAuto(3, "c3")
	if got[c1.IP()] != "" || got[c3.IP()] != "" {
		t.Fatalf("containers got addresses already allocated: %s %s", c1.IP(), c3.IP())
	}
	waitPingIP(t, c1.NS, "c1 -> c3", c3.IP())
}

func inRanges(rs []address.Range, ip string) bool {
	a, err := address.ParseIP(ip)
	return err == nil && slices.ContainsFunc(rs, func(r address.Range) bool { return r.Contains(a) })
}

// routerDo sends one request to host i's router API inside its namespace.
func (ic *ipamCluster) routerDo(i int, method, path string) (int, string, error) {
	var conn net.Conn
	err := netns.Do(netnstest.NSPath(ic.host(i).NS), func() error {
		var err error
		conn, err = net.DialTimeout("tcp", "127.0.0.1:6784", 3*time.Second)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("connect to the router API on h%d: %w", i, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(netnstest.CommandTimeout))
	req := fmt.Sprintf("%s %s HTTP/1.0\r\nHost: weave\r\nAccept: application/json\r\nContent-Length: 0\r\n\r\n", method, path)
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, "", fmt.Errorf("send %s %s to h%d: %w", method, path, i, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", fmt.Errorf("read answer to %s %s from h%d: %w", method, path, i, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(body)), err
}

// allocateHTTP allocates for id in the default subnet as the CNI plugin
// does (POST /ip/<id>) and returns the address.
func (ic *ipamCluster) allocateHTTP(i int, id string) string {
	ic.t.Helper()
	code, body, err := ic.routerDo(i, "POST", "/ip/"+id)
	if err != nil || code != http.StatusOK {
		ic.t.Fatalf("POST /ip/%s on h%d: %d %q %v", id, i, code, body, err)
	}
	p, err := netip.ParsePrefix(body)
	if err != nil || !ic.rng.Contains(p.Addr()) {
		ic.t.Fatalf("POST /ip/%s on h%d answered %q", id, i, body)
	}
	return p.Addr().String()
}

// getJSON decodes the answer to GET path on host i.
func (ic *ipamCluster) getJSON(i int, path string, v any) {
	ic.t.Helper()
	code, body, err := ic.routerDo(i, "GET", path)
	if err != nil || code != http.StatusOK {
		ic.t.Fatalf("GET %s on h%d: %d %q %v", path, i, code, body, err)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		ic.t.Fatalf("GET %s on h%d: %v", path, i, err)
	}
}

func (ic *ipamCluster) terminations(i int) int {
	var rep struct {
		Router struct{ TerminationCount int }
	}
	ic.getJSON(i, "/report", &rep)
	return rep.Router.TerminationCount
}

// reportedRing is host i's replica as GET /ipinfo/ring shows it.
func (ic *ipamCluster) reportedRing(i int) ringcheck.Ring {
	ic.t.Helper()
	var rj ipam.RingJSON
	ic.getJSON(i, "/ipinfo/ring", &rj)
	start, err1 := address.ParseIP(rj.Start)
	end, err2 := address.ParseIP(rj.End)
	peer, err3 := mesh.PeerNameFromString(rj.Peer)
	if err := errors.Join(err1, err2, err3); err != nil {
		ic.t.Fatalf("h%d ring %+v: %v", i, rj, err)
	}
	r := ringcheck.Ring{Start: start, End: end, Peer: peer}
	for _, e := range rj.Entries {
		tok, err1 := address.ParseIP(e.Token)
		owner, err2 := mesh.PeerNameFromString(e.Peer)
		if err := errors.Join(err1, err2); err != nil {
			ic.t.Fatalf("h%d ring entry %+v: %v", i, e, err)
		}
		r.Entries = append(r.Entries, ringcheck.Entry{Token: tok, Peer: owner, Version: e.Version, Free: address.Count(e.Free)})
	}
	return r
}

func (ic *ipamCluster) ownedRanges(i int) []address.Range {
	r := ic.reportedRing(i)
	return r.OwnedRanges(r.Peer)
}

// checkStrictRings: every reported ring passes 2.8.1's invariants and
// merges, under 2.8.1's rules, into every other host's ring (the receiver
// using its tokens' free counts to know where it holds addresses), and no
// token version shows two contents on any host at any time. For each pair
// the sender's ring is read before the receiver's, as a gossip message is
// older than the replica it reaches (a receiver is never behind on its
// own tokens).
func (ic *ipamCluster) checkStrictRings(t *testing.T, hist *ringcheck.History) {
	t.Helper()
	for i := 1; i <= 3; i++ {
		for j := 1; j <= 3; j++ {
			if i == j {
				continue
			}
			src := ic.reportedRing(j)
			dst := ic.reportedRing(i)
			for k, r := range map[int]ringcheck.Ring{j: src, i: dst} {
				if err := r.Check(); err != nil {
					t.Fatalf("h%d reports a ring 2.8.1 refuses: %v\n%s", k, err, r)
				}
				if err := hist.Observe(r); err != nil {
					t.Fatalf("h%d: %v", k, err)
				}
			}
			if _, err := ringcheck.Merge(dst, src, usedFromFree(dst)); err != nil {
				t.Fatalf("h%d (2.8.1 rules) refuses h%d's ring: %v\nheld:     %s\nincoming: %s", i, j, err, dst, src)
			}
		}
	}
}

// usedFromFree reports allocations wherever one of r's own tokens
// reports fewer free addresses than it owns.
func usedFromFree(r ringcheck.Ring) ringcheck.HasAllocations {
	return func(rs []address.Range) bool {
		for k, e := range r.Entries {
			if e.Peer != r.Peer || e.Free == r.Size(k) {
				continue
			}
			for _, x := range r.Ranges(e.Token, r.Entries[(k+1)%len(r.Entries)].Token) {
				if slices.ContainsFunc(rs, x.Overlaps) {
					return true
				}
			}
		}
		return false
	}
}

// checkSemanticVersion: `weave version`, the `Version:` line of `weave
// status` and /report's Version are one semantic version, 3.0.0-dev+<rev>.
func (ic *ipamCluster) checkSemanticVersion(t *testing.T) {
	t.Helper()
	var rep struct{ Version string }
	ic.getJSON(1, "/report", &rep)
	if !strings.HasPrefix(rep.Version, "3.0.0-dev") || strings.ContainsAny(rep.Version, " _") {
		t.Fatalf("/report Version %q is not 3.0.0-dev[+rev]", rep.Version)
	}
	if out := ic.weave(1, "version"); !strings.Contains(out, "weave router "+rep.Version+"\n") {
		t.Fatalf("weave version printed %q, want router %s", out, rep.Version)
	}
	if out := ic.weave(1, "status"); !strings.Contains(out, "        Version: "+rep.Version+" (") {
		t.Fatalf("weave status Version line differs from %s:\n%s", rep.Version, out)
	}
	t.Logf("version %s", rep.Version)
}
