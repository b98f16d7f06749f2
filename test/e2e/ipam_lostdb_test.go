package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestIPAMEmptiedDatabaseNoDuplicates is issue 9's attack: h2's
// weavedata.db is truncated to 0 bytes and h2 relaunched without peer
// arguments while h1 is down. It used to build a fresh ring owning the
// whole range alone and hand out h1's addresses again. Now it says so in
// its log, hands out nothing alone, and once h1 is back joins h1's ring:
// no address is given out twice.
func TestIPAMEmptiedDatabaseNoDuplicates(t *testing.T) {
	t.Parallel()
	ic := newIPAMCluster(t, 2, "10.44.0.0/24")
	ic.launch(1)
	ic.launch(2)
	h1 := map[string]bool{}
	for j := range 5 {
		h1[ic.allocateHTTP(1, fmt.Sprintf("h1c%d", j))] = true
		ic.allocateHTTP(2, fmt.Sprintf("h2c%d", j))
	}
	ic.weave(2, "stop")
	ic.weave(1, "stop") // h1 would reconnect to h2 at once: make h2 truly alone
	if err := os.Truncate(filepath.Join(ic.host(2).DataDir, "weavedata.db"), 0); err != nil {
		t.Fatal(err)
	}
	ic.solo = true
	ic.launch(2)
	ic.solo = false
	log, _ := os.ReadFile(filepath.Join(ic.host(2).RunDir, "weaver.log"))
	if !strings.Contains(string(log), "not starting a new IPAM ring alone") {
		t.Errorf("h2 did not say why it will not seed a ring:\n%s", log)
	}
	if code, body, err := ic.postWithin(2, "/ip/alone", 3*time.Second); err == nil {
		t.Fatalf("h2 alone allocated: %d %q", code, body)
	}
	ic.launch(1) // h1 keeps its database and dials h2
	for j := range 5 {
		id := fmt.Sprintf("h2new%d", j)
		var ip string
		netnstest.WaitFor(t, takeoverTimeout, "h2 allocates once it joined h1's ring", func() error {
			code, body, err := ic.postWithin(2, "/ip/"+id, 5*time.Second)
			if err == nil && code == 200 {
				ip, _, _ = strings.Cut(body, "/")
				return nil
			}
			return fmt.Errorf("POST /ip/%s: %d %q %v", id, code, body, err)
		})
		if h1[ip] {
			t.Errorf("h2 handed out %s (%s), which h1 already gave to one of its containers", ip, id)
		}
	}
}

// postWithin is POST path on host i's API with an answer expected within d.
func (ic *ipamCluster) postWithin(i int, path string, d time.Duration) (int, string, error) {
	var conn net.Conn
	err := netns.Do(netnstest.NSPath(ic.host(i).NS), func() (err error) {
		conn, err = net.DialTimeout("tcp", "127.0.0.1:6784", 3*time.Second)
		return err
	})
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(conn, "POST "+path+" HTTP/1.0\r\nHost: weave\r\nContent-Length: 0\r\n\r\n"); err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return 0, "", err
	}
	head, body, _ := strings.Cut(string(b), "\r\n\r\n")
	var code int
	if _, err := fmt.Sscanf(head, "HTTP/1.0 %d", &code); err != nil {
		if _, err := fmt.Sscanf(head, "HTTP/1.1 %d", &code); err != nil {
			return 0, "", fmt.Errorf("answer %q", head)
		}
	}
	return code, strings.TrimSpace(body), nil
}
