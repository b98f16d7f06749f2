package api

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Status returns the text of GET /status, or GET /status/<sub> when sub is
// not empty (targets, connections, peers, dns, ipam).
func (c *Client) Status(ctx context.Context, sub string) (string, error) {
	p := "/status"
	if sub != "" {
		p += "/" + url.PathEscape(sub)
	}
	return c.do(ctx, request{method: "GET", path: p})
}

// Ping reports nil when the router answers GET /status with 200. A 503
// (router still starting) comes back as an *HTTPError.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.Status(ctx, "")
	return err
}

// Report returns the full WeaveStatus JSON (GET /report, Accept: application/json).
func (c *Client) Report(ctx context.Context) (string, error) {
	return c.do(ctx, request{method: "GET", path: "/report", accept: "application/json"})
}

// ReportFormat returns GET /report?format=<tmpl>: the Go template applied
// to the router's WeaveStatus, e.g. "{{.Router.Name}}".
func (c *Client) ReportFormat(ctx context.Context, tmpl string) (string, error) {
	q := url.Values{"format": {tmpl}}
	return c.do(ctx, request{method: "GET", path: "/report?" + q.Encode()})
}

// PeerName returns this router's peer name ({{.Router.Name}}).
func (c *Client) PeerName(ctx context.Context) (string, error) {
	s, err := c.ReportFormat(ctx, "{{.Router.Name}}")
	return strings.TrimSpace(s), err
}

// Version returns the router's version ({{.Version}}).
func (c *Client) Version(ctx context.Context) (string, error) {
	s, err := c.ReportFormat(ctx, "{{.Version}}")
	return strings.TrimSpace(s), err
}

// Connect asks the router to connect to peers (POST /connect). With
// replace, the peers replace the current target list.
func (c *Client) Connect(ctx context.Context, peers []string, replace bool) error {
	form := url.Values{"peer": peers}
	if replace {
		form.Set("replace", "true")
	}
	_, err := c.do(ctx, request{method: "POST", path: "/connect", form: form})
	return err
}

// Forget removes peers from the router's target list (POST /forget).
func (c *Client) Forget(ctx context.Context, peers []string) error {
	_, err := c.do(ctx, request{method: "POST", path: "/forget", form: url.Values{"peer": peers}})
	return err
}

// Expose asks the router to add addr to the bridge and set up NAT for it
// (POST /expose/<ip>/<len>[?skipNAT=true]).
func (c *Client) Expose(ctx context.Context, addr netip.Prefix, skipNAT bool) error {
	p := "/expose/" + prefixPath(addr)
	if skipNAT {
		p += "?skipNAT=true"
	}
	_, err := c.do(ctx, request{method: "POST", path: p})
	return err
}

// DeletePeer tells the router this peer is leaving for good: IPAM hands
// its ranges to others (DELETE /peer).
func (c *Client) DeletePeer(ctx context.Context) error {
	_, err := c.do(ctx, request{method: "DELETE", path: "/peer"})
	return err
}

// RemovePeer takes over the IP ranges of a dead peer (DELETE /peer/<id>)
// and returns the router's message ("N IPs taken over from X").
func (c *Client) RemovePeer(ctx context.Context, peer string) (string, error) {
	return c.do(ctx, request{method: "DELETE", path: "/peer/" + url.PathEscape(peer)})
}

// AllocateIP allocates an address for id (POST /ip/<id>, or
// /ip/<id>/<net>/<len> when subnet is valid). check-alive is set so the
// router may later reclaim it when the container dies.
func (c *Client) AllocateIP(ctx context.Context, id string, subnet netip.Prefix) (netip.Prefix, error) {
	p := "/ip/" + url.PathEscape(id)
	if subnet.IsValid() {
		p += "/" + prefixPath(subnet)
	}
	s, err := c.do(ctx, request{method: "POST", path: p + "?check-alive=true"})
	if err != nil {
		return netip.Prefix{}, err
	}
	addr, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse allocated address %q: %w", s, err)
	}
	return addr, nil
}

// ClaimIP records that id uses addr (PUT /ip/<id>/<ip>/<len>).
func (c *Client) ClaimIP(ctx context.Context, id string, addr netip.Prefix) error {
	p := "/ip/" + url.PathEscape(id) + "/" + prefixPath(addr) + "?noErrorOnUnknown=true&check-alive=true"
	_, err := c.do(ctx, request{method: "PUT", path: p})
	return err
}

// LookupIP returns the addresses the router's IPAM holds for id (GET /ip/<id>).
func (c *Client) LookupIP(ctx context.Context, id string) ([]netip.Prefix, error) {
	s, err := c.do(ctx, request{method: "GET", path: "/ip/" + url.PathEscape(id)})
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, f := range strings.Fields(s) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("parse address %q of %s: %w", f, id, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ReleaseIP frees one address of id (DELETE /ip/<id>/<ip>), or all of
// them when addr is the zero value (DELETE /ip/<id>).
func (c *Client) ReleaseIP(ctx context.Context, id string, addr netip.Addr) error {
	p := "/ip/" + url.PathEscape(id)
	if addr.IsValid() {
		p += "/" + addr.String()
	}
	_, err := c.do(ctx, request{method: "DELETE", path: p})
	return err
}

func prefixPath(p netip.Prefix) string {
	return p.Addr().String() + "/" + strconv.Itoa(p.Bits())
}

// DefaultSubnet returns the IPAM default subnet (GET /ipinfo/defaultsubnet).
// A router without IPAM answers 404.
func (c *Client) DefaultSubnet(ctx context.Context) (netip.Prefix, error) {
	s, err := c.do(ctx, request{method: "GET", path: "/ipinfo/defaultsubnet"})
	if err != nil {
		return netip.Prefix{}, err
	}
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse default subnet %q: %w", s, err)
	}
	return p, nil
}
