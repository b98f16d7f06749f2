// Command weavewait is the entrypoint the Docker API proxy gives its
// containers (mounted read-only at /w/w): it waits until the container's
// ethwe interface is up with an IPv4 address, then execs the command
// Docker would have run, so the command starts on the mesh and its exit
// code is the container's. It must be a static binary (it runs in any
// image): it uses neither cgo nor the net package.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	iface = "ethwe"
	poll  = 20 * time.Millisecond
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "weavewait: no command to run (usage: weavewait COMMAND [ARG...])")
		os.Exit(127)
	}
	for !ready(iface) {
		time.Sleep(poll)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "weavewait: %v\n", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "weavewait: exec %s: %v\n", path, err)
	os.Exit(126)
}

// ready: the interface exists, is up and has an IPv4 address.
func ready(name string) bool {
	data, err := os.ReadFile("/sys/class/net/" + name + "/flags")
	if err != nil {
		return false
	}
	flags, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(data)), "0x"), 16, 32)
	if err != nil || flags&unix.IFF_UP == 0 {
		return false
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return false
	}
	return unix.IoctlIfreq(fd, unix.SIOCGIFADDR, ifr) == nil
}
