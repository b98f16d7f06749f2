//go:build !linux

package netns

import "errors"

// ErrUnsupported is returned on platforms without network namespaces.
var ErrUnsupported = errors.New("network namespaces are only supported on Linux")

// Do is unsupported outside Linux.
func Do(path string, fn func() error) error { return ErrUnsupported }

// RandomName returns prefix plus 5 random hex characters.
func RandomName(prefix string) string { return randomName(prefix) }
