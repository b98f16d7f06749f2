//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolValue is struct ethtool_value from <linux/ethtool.h>.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with the ifr_data pointer member, padded to the
// kernel's 40-byte ifreq.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// disableTxChecksum turns TX checksum offload off on ifname (ethtool -K
// ifname tx off) in the calling thread's namespace. Frames that leave the
// kernel through a packet socket must carry full checksums, because the
// router forwards them verbatim to another host. A device that cannot change
// the feature is left alone.
func disableTxChecksum(ifname string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open ethtool socket for %s: %w", ifname, err)
	}
	defer unix.Close(fd)
	val := ethtoolValue{cmd: unix.ETHTOOL_STXCSUM, data: 0}
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = unsafe.Pointer(&val)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 && !errors.Is(errno, unix.EOPNOTSUPP) {
		return fmt.Errorf("disable tx checksum offload on %s: %w", ifname, errno)
	}
	return nil
}

// txChecksumEnabled reports the TX checksum offload state (ethtool -k).
func txChecksumEnabled(ifname string) (bool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("open ethtool socket for %s: %w", ifname, err)
	}
	defer unix.Close(fd)
	val := ethtoolValue{cmd: unix.ETHTOOL_GTXCSUM}
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = unsafe.Pointer(&val)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return false, fmt.Errorf("get tx checksum offload of %s: %w", ifname, errno)
	}
	return val.data != 0, nil
}

// setSysctl writes value to /proc/sys/<rel> (rel uses slashes, so interface
// names containing dots are safe). Network sysctls resolve in the namespace
// of the calling thread, so callers in another namespace run inside netns.Do.
func setSysctl(rel, value string) error {
	path := filepath.Join("/proc/sys", rel)
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("set sysctl %s=%s: %w", rel, value, err)
	}
	return nil
}

// readSysctl reads /proc/sys/<rel> without the trailing newline.
func readSysctl(rel string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc/sys", rel))
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", rel, err)
	}
	return strings.TrimSpace(string(b)), nil
}
