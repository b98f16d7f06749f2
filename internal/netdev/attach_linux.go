//go:build linux

package netdev

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/nlsafe"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ContainerPeerPrefix started the temporary host-side name of the
// container end of the veth when it was moved and renamed; attaches now
// create it in the container directly, and a leftover of that name is
// deleted.
const ContainerPeerPrefix = "vethwepg"

// ShortID returns the 7-character id used in vethwepl<id>: the first 7
// interface-name-safe characters of containerID, or, if containerID is
// empty (or has none), a hash of the namespace path.
func ShortID(containerID, netnsPath string) string {
	id := make([]byte, 0, 7)
	for i := 0; i < len(containerID) && len(id) < 7; i++ {
		c := containerID[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			id = append(id, c)
		}
	}
	if len(id) > 0 {
		return string(id)
	}
	sum := sha256.Sum256([]byte(netnsPath))
	return hex.EncodeToString(sum[:])[:7]
}

// withDefaults fills unset AttachConfig fields.
func (cfg AttachConfig) withDefaults() AttachConfig {
	if cfg.Bridge == "" {
		cfg.Bridge = DefaultBridge
	}
	if cfg.IfName == "" {
		cfg.IfName = DefaultContainerIf
	}
	return cfg
}

// AttachContainer creates the veth (if missing), moves one end into the
// namespace as IfName, adds the addresses (idempotent), sets ARP sysctls,
// the multicast route, sends gratuitous ARP, and enslaves the host end with
// hairpin on. Returns the container interface MAC.
func AttachContainer(cfg AttachConfig) (net.HardwareAddr, error) {
	cfg = cfg.withDefaults()
	br, err := netlink.LinkByName(cfg.Bridge)
	if err != nil {
		return nil, fmt.Errorf("look up bridge %s: %w", cfg.Bridge, err)
	}
	if cfg.MTU == 0 {
		cfg.MTU = br.Attrs().MTU
	}
	ns, err := vnetns.GetFromPath(cfg.NetNS)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", cfg.NetNS, err)
	}
	defer ns.Close()
	host := cfg.HostIfName
	if host == "" {
		host = ContainerVethPrefix + ShortID(cfg.ContainerID, cfg.NetNS)
	}
	if err := ensureContainerVeth(cfg, ns, host); err != nil {
		return nil, err
	}
	if err := attachHostEnd(host, br, !cfg.NoHairpin); err != nil {
		return nil, err
	}
	var st insideState
	err = netns.DoHandle(ns, func() error {
		var err error
		st, err = configureInside(cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("configure %s in %s: %w", cfg.IfName, cfg.NetNS, err)
	}
	if len(st.added) == 0 {
		return st.mac, nil
	}
	if hl, err := netlink.LinkByName(host); err == nil {
		awaitForwarding(hl.Attrs().Index, carrierWait)
	}
	err = netns.DoHandle(ns, func() error { return announce(cfg.IfName, st) })
	if err != nil {
		return nil, fmt.Errorf("announce addresses of %s in %s: %w", cfg.IfName, cfg.NetNS, err)
	}
	return st.mac, nil
}

// ensureContainerVeth creates the pair and moves the peer into ns as
// cfg.IfName, unless cfg.IfName already exists there.
func ensureContainerVeth(cfg AttachConfig, ns vnetns.NsHandle, host string) error {
	nh, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("open netlink in %s: %w", cfg.NetNS, err)
	}
	defer nh.Close()
	if _, err := nh.LinkByName(cfg.IfName); err == nil {
		return nil
	} else if !isNotFound(err) {
		return fmt.Errorf("look up %s in %s: %w", cfg.IfName, cfg.NetNS, err)
	}
	guest := ContainerPeerPrefix + strings.TrimPrefix(host, ContainerVethPrefix)
	for _, stale := range []string{host, guest} { // left over from a failed attach
		if err := deleteLink(stale); err != nil {
			return err
		}
	}
	// The peer is born in the container as cfg.IfName: no move, no rename.
	if err := createVethPeerIn(host, cfg.IfName, cfg.MTU, cfg.MAC, netlink.NsFd(int(ns))); err != nil {
		return fmt.Errorf("in %s: %w", cfg.NetNS, err)
	}
	return nil
}

// attachHostEnd enslaves the host-side veth, sets hairpin and sets it up.
func attachHostEnd(host string, br netlink.Link, hairpin bool) error {
	l, err := netlink.LinkByName(host)
	if isNotFound(err) {
		return nil // the container interface pre-existed under another host name
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", host, err)
	}
	if err := enslave(l, br); err != nil {
		return err
	}
	if err := netlink.LinkSetHairpin(l, hairpin); err != nil {
		return fmt.Errorf("set hairpin on %s: %w", host, err)
	}
	// TX checksum offload stays on here too: with it off, every GRO'd
	// segment the VXLAN path delivers towards the container would be
	// re-segmented and checksummed in software on this hop.
	disableIPv6(host)
	return setUp(l)
}

// insideState is what configureInside learned about the container interface.
type insideState struct {
	mac   net.HardwareAddr
	added []netip.Prefix
}

// configureInside runs in the container namespace: sysctls,
// addresses, link up and the multicast route.
func configureInside(cfg AttachConfig) (insideState, error) {
	link, err := netlink.LinkByName(cfg.IfName)
	if err != nil {
		return insideState{}, fmt.Errorf("look up %s: %w", cfg.IfName, err)
	}
	// TX checksum offload stays ON inside the container (unlike Weave
	// 2.8.1): it is what lets the container's TCP build large GSO segments,
	// which the VXLAN path carries in the kernel. Frames bound for the
	// userspace path get their checksums completed by the kernel when the
	// bridge transmits them to vethwe-bridge, whose offload is off.
	if err := setNeighSysctls(cfg.IfName); err != nil {
		return insideState{}, err
	}
	added, err := addAddrs(link, cfg.Addrs)
	if err != nil {
		return insideState{}, err
	}
	if err := setUp(link); err != nil {
		return insideState{}, err
	}
	if !cfg.NoMulticastRoute {
		if err := addMulticastRoute(link); err != nil {
			return insideState{}, err
		}
	}
	return insideState{mac: link.Attrs().HardwareAddr, added: added}, nil
}

// announce runs in the container namespace and has the kernel send a
// gratuitous ARP for the addresses once the interface can transmit.
func announce(ifname string, st insideState) error {
	awaitCarrier(ifname, carrierWait)
	return announceAddrs(ifname, st.mac, st.added)
}

// carrierWait bounds how long configureInside waits for the new interface
// to come up before announcing its addresses.
const carrierWait = 2 * time.Second

// awaitCarrier polls until ifname is operationally up or max passes: until
// linkwatch activates a new link's qdisc, frames sent on it are dropped, so
// a gratuitous ARP sent too early is lost. Netlink offers no cheaper wait.
func awaitCarrier(ifname string, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		l, err := netlink.LinkByName(ifname)
		if err != nil || l.Attrs().OperState == netlink.OperUp {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// setNeighSysctls makes ARP entries expire and re-probe quickly, so a MAC
// that moves (container restarted on another host) is relearned fast.
func setNeighSysctls(ifname string) error {
	base := "net/ipv4/neigh/" + ifname + "/"
	for _, kv := range [][2]string{{"base_reachable_time", "5"}, {"delay_first_probe_time", "2"}, {"ucast_solicit", "1"}} {
		if err := setSysctl(base+kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// addAddrs adds the addresses not yet on link and returns those it added.
func addAddrs(link netlink.Link, want []netip.Prefix) ([]netip.Prefix, error) {
	have, err := linkPrefixes(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	var added []netip.Prefix
	for _, p := range want {
		if containsPrefix(have, p) {
			continue
		}
		if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: prefixToIPNet(p)}); err != nil && !errors.Is(err, unix.EEXIST) {
			return added, fmt.Errorf("add address %s to %s: %w", p, link.Attrs().Name, err)
		}
		added = append(added, p)
	}
	return added, nil
}

// addMulticastRoute routes 224.0.0.0/4 via the container interface.
func addMulticastRoute(link netlink.Link) error {
	_, dst, _ := net.ParseCIDR("224.0.0.0/4")
	r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}
	if err := netlink.RouteReplace(r); err != nil {
		return fmt.Errorf("add route 224.0.0.0/4 dev %s: %w", link.Attrs().Name, err)
	}
	return nil
}

// DetachContainer removes addrs from the container interface; with no addrs,
// or when no address remains, it deletes the interface.
func DetachContainer(netnsPath, ifName string, addrs []netip.Prefix) error {
	if ifName == "" {
		ifName = DefaultContainerIf
	}
	err := netns.Do(netnsPath, func() error {
		link, err := netlink.LinkByName(ifName)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("look up %s: %w", ifName, err)
		}
		for _, p := range addrs {
			err := netlink.AddrDel(link, &netlink.Addr{IPNet: prefixToIPNet(p)})
			if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				return fmt.Errorf("delete address %s from %s: %w", p, ifName, err)
			}
		}
		left, err := linkPrefixes(link, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		if len(addrs) > 0 && len(left) > 0 {
			return nil
		}
		if err := netlink.LinkDel(link); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete %s: %w", ifName, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("detach %s in %s: %w", ifName, netnsPath, err)
	}
	return nil
}

// ContainerAddrs returns the MAC and IPv4 addresses of ifName inside the
// namespace; ok=false if the interface does not exist.
func ContainerAddrs(netnsPath, ifName string) (mac net.HardwareAddr, addrs []netip.Prefix, ok bool, err error) {
	if ifName == "" {
		ifName = DefaultContainerIf
	}
	err = netns.Do(netnsPath, func() error {
		link, err := netlink.LinkByName(ifName)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("look up %s: %w", ifName, err)
		}
		ok, mac = true, link.Attrs().HardwareAddr
		addrs, err = linkPrefixes(link, netlink.FAMILY_V4)
		return err
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("read addresses of %s in %s: %w", ifName, netnsPath, err)
	}
	return mac, addrs, ok, nil
}

// linkPrefixes lists the addresses on link as prefixes.
func linkPrefixes(link netlink.Link, family int) ([]netip.Prefix, error) {
	list, err := nlsafe.AddrList(nil, link, family)
	if err != nil {
		return nil, fmt.Errorf("list addresses of %s: %w", link.Attrs().Name, err)
	}
	out := make([]netip.Prefix, 0, len(list))
	for _, a := range list {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out, nil
}

func containsPrefix(list []netip.Prefix, p netip.Prefix) bool {
	for _, q := range list {
		if q == p {
			return true
		}
	}
	return false
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() && !p.Addr().Is4In6() {
		bits = 128
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), bits)}
}
