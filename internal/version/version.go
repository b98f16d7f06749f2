// Package version holds the build's version: a semantic version that
// `weave version`, the `Version:` line of `weave status` and /report show,
// so tools can compare it with Weave Net 2.8.1's.
//
// `make build` links in the git revision:
//
//	-ldflags "-X github.com/seedf75a49c6/weave/internal/version.Build=<git hash>"
//
// giving Base+"+"+Build, e.g. 3.0.0-dev+1a2b3c4d5e6f. A release sets the
// whole string instead (-X ...version.Version=3.0.0). A plain `go build` in
// a git checkout uses the revision Go stamps into the binary; anything else
// shows Base.
package version

import "runtime/debug"

// Base is the version this tree is developing.
const Base = "3.0.0-dev"

// Build is the build metadata (the git revision), set at link time.
var Build = ""

// Version is this build's version; set at link time for a release.
var Version = ""

func init() {
	if Version == "" {
		Version = compute(Build, vcsRevision())
	}
}

// compute is Base with the build metadata (or else the VCS revision)
// after a "+".
func compute(build, revision string) string {
	if build == "" {
		build = revision
	}
	if build == "" {
		return Base
	}
	return Base + "+" + build
}

func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	rev = rev[:min(12, len(rev))]
	if rev != "" && dirty {
		rev += ".dirty"
	}
	return rev
}
