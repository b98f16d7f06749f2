// Package httpapi is weaver's HTTP server: the routes Weave Net 2.8.1's
// `weave` script and tools speak (status texts, report JSON and templates,
// metrics, connect/forget, expose) on --http-addr, and the read-only subset
// on --status-addr.
//
// It sits above the components whose state it shows (router, ipam) and
// below the composition root (prog/weaver/daemon), which gives it a
// Backend over the live router. The handlers only see that interface, so
// they are tested with fakes.
package httpapi
