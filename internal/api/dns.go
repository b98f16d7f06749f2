package api

import (
	"context"
	"net/netip"
	"net/url"
	"strings"
)

// AddName registers fqdn -> addr for container id in weaveDNS
// (PUT /name/<id>/<ip> fqdn=...); checkAlive lets the router refuse a
// container that is gone.
func (c *Client) AddName(ctx context.Context, id string, addr netip.Addr, fqdn string, checkAlive bool) error {
	form := url.Values{"fqdn": {fqdn}}
	if checkAlive {
		form.Set("check-alive", "true")
	}
	_, err := c.do(ctx, request{method: "PUT", path: "/name/" + url.PathEscape(id) + "/" + addr.String(), form: form})
	return err
}

// DeleteName tombstones weaveDNS entries (DELETE /name[/<id>[/<ip>]]
// [?fqdn=...]): an empty id, an invalid addr or an empty fqdn match
// anything.
func (c *Client) DeleteName(ctx context.Context, id string, addr netip.Addr, fqdn string) error {
	p := "/name"
	if id != "" || addr.IsValid() {
		p += "/" + url.PathEscape(orStar(id))
	}
	if addr.IsValid() {
		p += "/" + addr.String()
	}
	if fqdn != "" {
		p += "?" + url.Values{"fqdn": {fqdn}}.Encode()
	}
	_, err := c.do(ctx, request{method: "DELETE", path: p})
	return err
}

func orStar(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// DNSDomain returns weaveDNS's domain (GET /domain), e.g. "weave.local.".
func (c *Client) DNSDomain(ctx context.Context) (string, error) {
	s, err := c.do(ctx, request{method: "GET", path: "/domain"})
	return strings.TrimSpace(s), err
}

// DNSAddress returns where weaveDNS listens, host:port (GET /dns-address-port).
func (c *Client) DNSAddress(ctx context.Context) (string, error) {
	s, err := c.do(ctx, request{method: "GET", path: "/dns-address-port"})
	return strings.TrimSpace(s), err
}
