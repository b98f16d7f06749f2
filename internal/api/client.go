// Package api is a typed Go client for the weaver HTTP control API
// (Weave Net 2.8.1 compatible routes, default address 127.0.0.1:6784).
//
// The weave CLI, and later the CNI and Docker plugins, use it instead of
// speaking HTTP themselves. Every method maps one route; errors are typed so
// callers can tell "no router answers" (*NotRunningError) from "the router
// refused the request" (*HTTPError, which carries the status code and the
// router's own message).
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultAddr is weaver's default --http-addr.
const DefaultAddr = "127.0.0.1:6784"

// DefaultConnectTimeout bounds the TCP (or unix socket) connect, like the
// `curl --connect-timeout 3` Weave's script used.
const DefaultConnectTimeout = 3 * time.Second

// Config configures a Client.
type Config struct {
	// Addr is host:port, or an absolute path for a unix socket (as weaver's
	// --http-addr accepts). Default DefaultAddr.
	Addr string
	// ConnectTimeout bounds connection establishment. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Timeout bounds a whole request; 0 means no limit beyond the context.
	Timeout time.Duration
}

// Client calls one weaver's HTTP API. It is safe for concurrent use.
type Client struct {
	base    string // e.g. "http://127.0.0.1:6784"
	display string // what error messages call the router
	http    *http.Client
}

// NewClient returns a client for cfg.Addr.
func NewClient(cfg Config) *Client {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout}
	tr := &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}
	c := &Client{base: "http://" + cfg.Addr, display: "http://" + cfg.Addr}
	if strings.HasPrefix(cfg.Addr, "/") {
		path := cfg.Addr
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		}
		c.base = "http://unix"
		c.display = "unix://" + path
	}
	c.http = &http.Client{Transport: tr, Timeout: cfg.Timeout}
	return c
}

// Addr returns the router address as shown in messages
// ("http://127.0.0.1:6784" or "unix:///path").
func (c *Client) Addr() string { return c.display }

// NotRunningError reports that nothing answered at the router address.
type NotRunningError struct {
	Addr string // as Client.Addr
	Err  error
}

func (e *NotRunningError) Error() string {
	return fmt.Sprintf("weave router is not running (no answer from %s)", e.Addr)
}

func (e *NotRunningError) Unwrap() error { return e.Err }

// HTTPError is a non-2xx answer from the router.
type HTTPError struct {
	Method, Path string
	Code         int    // HTTP status code
	Message      string // response body, trimmed
}

func (e *HTTPError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("%s %s: %d: %s", e.Method, e.Path, e.Code, msg)
}

// IsNotRunning reports whether err means no router answered.
func IsNotRunning(err error) bool {
	var nr *NotRunningError
	return errors.As(err, &nr)
}

// IsNotHeld reports whether err is IPAM's refusal to release what an ID
// does not hold: 400 with "Delete: no addresses for <id>" (2.8.1's text)
// or "Unable to free: <ip> address not held by <id>". Releasing is
// idempotent for CNI DEL and detach, so callers treat it as done.
func IsNotHeld(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.Code == http.StatusBadRequest &&
		(strings.Contains(he.Message, "no addresses for ") || strings.Contains(he.Message, "address not held by "))
}

// StatusCode returns the HTTP status of err if it is an *HTTPError, else 0.
func StatusCode(err error) int {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	return 0
}

// request describes one call.
type request struct {
	method string
	path   string // escaped path, may include "?query"
	form   url.Values
	accept string
}

// do performs r and returns the body of a 2xx answer.
func (c *Client) do(ctx context.Context, r request) (string, error) {
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, body)
	if err != nil {
		return "", fmt.Errorf("build request %s %s: %w", r.method, r.path, err)
	}
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if isDialError(err) {
			return "", &NotRunningError{Addr: c.display, Err: err}
		}
		return "", fmt.Errorf("call %s %s on %s: %w", r.method, r.path, c.display, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read answer to %s %s: %w", r.method, r.path, err)
	}
	if resp.StatusCode/100 != 2 {
		return "", &HTTPError{Method: r.method, Path: r.path, Code: resp.StatusCode,
			Message: strings.TrimSpace(string(data))}
	}
	return string(data), nil
}

// isDialError reports whether err happened while connecting (nothing
// listening, no such socket, connect timeout).
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
