package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttachRewriteHosts: attach --rewrite-hosts --add-host writes the
// container's hosts file with its weave address and the static entries;
// a namespace target is refused; a bad --add-host is a usage error.
func TestAttachRewriteHosts(t *testing.T) {
	h := newHarness(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("172.17.0.2\tweb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	web := running("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", os.Getpid())
	web.Config.Hostname, web.Config.Domainname, web.HostsPath = "web", "weave.local", hosts
	h.fakeDocker(map[string]dockerContainer{"web": web})
	h.withRouter()
	code, out, errOut := h.run("attach", "10.2.1.1/24", "--rewrite-hosts", "--add-host", "db:10.9.9.9", "--add-host=gw:10.2.0.1", "--without-dns", "web")
	if code != 0 || out != "10.2.1.1\n" {
		t.Fatalf("attach --rewrite-hosts: %d %q %q", code, out, errOut)
	}
	data, _ := os.ReadFile(hosts)
	for _, w := range []string{"10.2.1.1\tweb.weave.local web\n", "10.9.9.9\tdb\n", "10.2.0.1\tgw\n", "127.0.0.1\tlocalhost\n"} {
		if !strings.Contains(string(data), w) {
			t.Fatalf("hosts file:\n%s\nwant %q", data, w)
		}
	}
	h.netns("ns1")
	if code, _, errOut := h.run("attach", "10.2.1.2/24", "--rewrite-hosts", "ns1"); code != 1 || !strings.Contains(errOut, "--rewrite-hosts needs a Docker container") {
		t.Fatalf("attach --rewrite-hosts on a namespace: %d %q", code, errOut)
	}
	if code, _, errOut := h.run("attach", "--add-host", "db", "web"); code != 1 || !strings.Contains(errOut, `invalid --add-host "db": want name:ip`) {
		t.Fatalf("attach --add-host db: %d %q", code, errOut)
	}
}
