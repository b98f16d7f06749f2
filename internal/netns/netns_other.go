//go:build !linux

package netns

import (
	"errors"
	"testing"
)

// ErrUnsupported is returned on platforms without network namespaces.
var ErrUnsupported = errors.New("network namespaces are only supported on Linux")

// Do is unsupported outside Linux.
func Do(path string, fn func() error) error { return ErrUnsupported }

// RequireRoot skips the test: namespaces need Linux.
func RequireRoot(t testing.TB) {
	t.Helper()
	t.Skip("SKIPPING: needs Linux network namespaces and root (CAP_NET_ADMIN)")
}

// NewTestNS skips the test: namespaces need Linux.
func NewTestNS(t testing.TB) (name, path string) {
	RequireRoot(t)
	return "", ""
}

// RandomName returns prefix plus 5 random hex characters.
func RandomName(prefix string) string { return randomName(prefix) }
