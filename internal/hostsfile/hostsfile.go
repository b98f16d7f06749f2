// Package hostsfile writes a container's /etc/hosts so that its own name
// resolves to its weave address, as Weave Net 2.8.1's `weave attach
// --rewrite-hosts` and its Docker API proxy did (`hostname -i` then
// prints the weave address, not Docker's bridge address).
package hostsfile

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// Host is one static entry (docker run --add-host, weave attach --add-host).
type Host struct {
	Name string
	Addr netip.Addr
}

// ParseHost parses Docker's "name:ip" form (ip may be IPv6, so the first
// colon separates).
func ParseHost(s string) (Host, error) {
	name, ip, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return Host{}, fmt.Errorf("invalid --add-host %q: want name:ip", s)
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return Host{}, fmt.Errorf("invalid --add-host %q: %q is not an IP address", s, ip)
	}
	return Host{Name: name, Addr: a}, nil
}

// Render is the file: the container's names on each of its weave
// addresses, the static entries, then the usual loopback lines.
func Render(fqdn string, addrs []netip.Prefix, extra []Host) []byte {
	var b bytes.Buffer
	b.WriteString("# written by weave: the container's weave addresses first\n")
	names := fqdn
	if short, _, ok := strings.Cut(strings.TrimSuffix(fqdn, "."), "."); ok {
		names = strings.TrimSuffix(fqdn, ".") + " " + short
	}
	if names != "" {
		for _, a := range addrs {
			fmt.Fprintf(&b, "%s\t%s\n", a.Addr(), names)
		}
	}
	for _, h := range extra {
		fmt.Fprintf(&b, "%s\t%s\n", h.Addr, h.Name)
	}
	b.WriteString("127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"ff00::0\tip6-mcastprefix\n" +
		"ff02::1\tip6-allnodes\n" +
		"ff02::2\tip6-allrouters\n")
	return b.Bytes()
}

// Write replaces path (the host side of a container's /etc/hosts, which
// the container has bind-mounted) in place: the mount pins the inode, so
// the file is truncated and rewritten rather than renamed over.
func Write(path, fqdn string, addrs []netip.Prefix, extra []Host) error {
	if path == "" || !filepath.IsAbs(path) {
		return fmt.Errorf("hosts file %q: want an absolute path", path)
	}
	if err := os.WriteFile(path, Render(fqdn, addrs, extra), 0o644); err != nil {
		return fmt.Errorf("rewrite hosts file: %w", err)
	}
	return nil
}
