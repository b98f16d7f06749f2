// Package weaver is the logic of the weaver daemon: its typed
// configuration, the startup and shutdown sequence that wires the mesh
// control plane, the network router, the sleeve overlay, the bridge and the
// capture socket together (Run), and the HTTP API that Weave Net 2.8.1's
// `weave` script and tools speak (status texts, report JSON, metrics,
// connect/forget).
//
// The HTTP layer only sees a small Backend interface, so it is tested with
// fakes; Run provides the real Backend over a *mesh.Router.
package weaver

// Version is the weaver version, shown by --version, in `weave status` and
// in the report. Set it at link time with
//
//	-ldflags "-X github.com/seedf75a49c6/weave/internal/weaver.Version=$(git describe --tags --always)"
var Version = "unreleased"
