// Package version holds the build's version: a semantic version that
// `weave version`, the `Version:` line of `weave status` and /report show.
// Release and development builds set it at link time:
//
//	-ldflags "-X github.com/seedf75a49c6/weave/internal/version.Version=3.0.0-dev+abc1234"
package version

// Version is this build's version.
var Version = "unreleased"
