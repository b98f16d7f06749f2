package main

import (
	"fmt"
	"runtime"

	vnetns "github.com/vishvananda/netns"
)

// inNetNS runs fn on a thread inside the network namespace at path ("" =
// the current one). Netlink sockets and /proc/sys files opened there stay
// bound to that namespace afterwards, which is all weave-npc needs: the
// API connection stays in the namespace the process started in.
func inNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	runtime.LockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get current netns: %w", err)
	}
	defer orig.Close()
	target, err := vnetns.GetFromPath(path)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open --netns %s: %w", path, err)
	}
	defer target.Close()
	if err := vnetns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter --netns %s: %w", path, err)
	}
	fnErr := fn()
	if err := vnetns.Set(orig); err != nil {
		return fmt.Errorf("leave --netns %s: %w", path, err) // the thread stays locked and dies with its goroutine
	}
	runtime.UnlockOSThread()
	return fnErr
}
