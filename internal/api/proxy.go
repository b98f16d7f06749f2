package api

import (
	"context"
	"strings"
)

// ProxyAddrs returns the Docker API proxy's listen addresses (GET
// /proxyaddrs); none when the proxy is off.
func (c *Client) ProxyAddrs(ctx context.Context) ([]string, error) {
	s, err := c.do(ctx, request{method: "GET", path: "/proxyaddrs"})
	return strings.Fields(s), err
}

// Prime blocks until the IPAM ring exists (GET /ring, weave prime).
func (c *Client) Prime(ctx context.Context) error {
	_, err := c.do(ctx, request{method: "GET", path: "/ring"})
	return err
}
