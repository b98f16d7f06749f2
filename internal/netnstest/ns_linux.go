package netnstest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	vnetns "github.com/vishvananda/netns"
)

// NewNS creates a uniquely named network namespace (like `ip netns add`),
// returns its name and path, and deletes it in t.Cleanup. The name carries
// the creator's PID, so Sweep removes it if the test process dies. It
// skips (under CI=true: fails) when not root.
func NewNS(t testing.TB) (name, path string) {
	t.Helper()
	RequireRoot(t)
	name = fmt.Sprintf("%s-%d-ns", newPrefix(), os.Getpid())
	if err := newNamed(name); err != nil {
		t.Fatalf("create test netns %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := vnetns.DeleteNamed(name); err != nil {
			t.Errorf("delete test netns %s: %v", name, err)
		}
	})
	return name, filepath.Join("/var/run/netns", name)
}

// newNamed creates a named namespace on a locked thread and moves the thread
// back afterwards (vnetns.NewNamed leaves the thread inside the new one).
func newNamed(name string) error {
	runtime.LockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get current netns: %w", err)
	}
	defer orig.Close()
	created, nsErr := vnetns.NewNamed(name)
	if nsErr == nil {
		created.Close()
	}
	if err := vnetns.Set(orig); err != nil {
		return fmt.Errorf("restore netns after creating %s: %w", name, err) // thread stays locked
	}
	runtime.UnlockOSThread()
	if nsErr != nil {
		return fmt.Errorf("create netns %s: %w", name, nsErr)
	}
	return nil
}
