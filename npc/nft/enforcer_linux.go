//go:build linux

package nft

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedf75a49c6/weave/npc"
)

// Config says where to enforce.
type Config struct {
	Bridge string // default "weave"
	Table  string // default DefaultTable
	// AllowMulticast accepts traffic to 224.0.0.0/4 from and to isolated
	// pods, as 2.8.1's --allow-mcast (default there: on).
	AllowMulticast bool
}

// Enforcer loads models into the kernel of the network namespace it was
// created in.
type Enforcer struct {
	cfg    Config
	conn   *nftables.Conn
	mu     sync.Mutex
	closed bool // after Close every call fails: a transient netlink
	// connection would open in the caller's namespace, not the one New saw
}

// errClosed is returned by calls after Close.
var errClosed = errors.New("nftables enforcer is closed")

// Stats describe the last table loaded.
type Stats struct {
	Rules, Sets, Elements int
}

// New opens a netlink connection in the calling thread's network namespace
// (wrap it in netns.Do to enforce in another one).
func New(cfg Config) (*Enforcer, error) {
	if cfg.Bridge == "" {
		cfg.Bridge = "weave"
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	c, err := nftables.New(nftables.AsLasting(), nftables.WithSockOptions(bigBuffers))
	if err != nil {
		return nil, fmt.Errorf("open nftables netlink connection: %w", err)
	}
	return &Enforcer{cfg: cfg, conn: c}, nil
}

// Close releases the netlink connection; the table stays loaded, so the
// last policies keep being enforced.
func (e *Enforcer) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.conn.CloseLasting()
}

// Apply replaces the table with one enforcing m, in a single transaction.
func (e *Enforcer) Apply(m *npc.Model) (Stats, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Stats{}, errClosed
	}
	b, err := build(e.conn, e.cfg, m)
	if err != nil {
		return Stats{}, fmt.Errorf("build table %s: %w", e.cfg.Table, err)
	}
	if err := e.conn.Flush(); err != nil {
		return Stats{}, fmt.Errorf("load table inet %s: %w", e.cfg.Table, err)
	}
	st := Stats{Rules: b.rules, Sets: len(b.sets)}
	for _, s := range m.Sets {
		st.Elements += s.Len()
	}
	return st, nil
}

// Remove deletes the table (pods become open unless the router's guard is on).
func (e *Enforcer) Remove() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: e.cfg.Table}
	e.conn.AddTable(t)
	e.conn.DelTable(t)
	if err := e.conn.Flush(); err != nil {
		return fmt.Errorf("delete table inet %s: %w", e.cfg.Table, err)
	}
	return nil
}

// bridgeNFCall is the sysctl that sends bridged IPv4 frames through the
// inet hooks.
const bridgeNFCall = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// EnsureBridgeNetfilter turns on bridge-nf-call-iptables in the calling
// thread's network namespace; without it bridged pod traffic would bypass
// the table. It reports whether it had to change the setting.
func EnsureBridgeNetfilter() (changed bool, err error) {
	b, err := os.ReadFile(bridgeNFCall)
	if errors.Is(err, os.ErrNotExist) {
		return false, errors.New("br_netfilter is not available (no " + bridgeNFCall + "): load the br_netfilter module")
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", bridgeNFCall, err)
	}
	if strings.TrimSpace(string(b)) == "1" {
		return false, nil
	}
	if err := os.WriteFile(bridgeNFCall, []byte("1"), 0o644); err != nil {
		return false, fmt.Errorf("enable %s: %w", bridgeNFCall, err)
	}
	return true, nil
}

// Socket buffer sizes. A transaction must reach the kernel in a single
// sendmsg, and a table for 1,000 pods and 200 policies is several hundred
// KiB, beyond the default limit; like nft(8), we force larger buffers
// (SO_SNDBUFFORCE needs CAP_NET_ADMIN, which enforcing needs anyway).
const (
	sendBuffer = 64 << 20
	recvBuffer = 8 << 20
)

func bigBuffers(c *netlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = errors.Join(unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sendBuffer),
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, recvBuffer))
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("size netlink socket buffers: %w", err)
	}
	return nil
}
