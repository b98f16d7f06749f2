//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seedf75a49c6/weave/internal/nlsafe"
	"github.com/vishvananda/netlink"
)

// ContainerVethPrefix starts the name of every host-side container veth.
const ContainerVethPrefix = "vethwepl"

// withDefaults fills unset BridgeConfig fields.
func (cfg BridgeConfig) withDefaults() BridgeConfig {
	if cfg.Name == "" {
		cfg.Name = DefaultBridge
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.PcapIface == "" {
		cfg.PcapIface = DefaultPcapIface
	}
	if cfg.BridgeIface == "" {
		cfg.BridgeIface = DefaultBridgeIface
	}
	return cfg
}

// EnsureBridge creates (or repairs) the bridge and the capture veth pair,
// sets MTU and MAC, disables TX checksum offload where the userspace path
// needs it, and brings everything up. Idempotent.
func EnsureBridge(cfg BridgeConfig) error {
	cfg = cfg.withDefaults()
	br, err := ensureBridgeLink(cfg)
	if err != nil {
		return err
	}
	// The pair goes in first with the full MTU: a bridge's MTU cannot
	// usefully exceed that of its ports.
	if err := ensureCapturePair(cfg, br); err != nil {
		return err
	}
	if err := configureBridge(cfg, br); err != nil {
		return err
	}
	for _, name := range []string{cfg.Name, cfg.BridgeIface, cfg.PcapIface} {
		if err := disableTxChecksum(name); err != nil {
			return err
		}
	}
	return nil
}

// ensureBridgeLink returns the bridge, creating it if missing.
func ensureBridgeLink(cfg BridgeConfig) (netlink.Link, error) {
	link, err := netlink.LinkByName(cfg.Name)
	if err == nil {
		if _, ok := link.(*netlink.Bridge); !ok {
			if link.Type() == "openvswitch" {
				return nil, fmt.Errorf("ensure bridge %s: it is Weave Net 2.8.1's fast datapath (--no-bridged-fastdp), "+
					"which this router cannot take over in place: remove it with 2.8.1's `weave reset` (its containers lose their network)", cfg.Name)
			}
			return nil, fmt.Errorf("ensure bridge %s: exists as a %s device", cfg.Name, link.Type())
		}
		return link, nil
	}
	if !isNotFound(err) {
		return nil, fmt.Errorf("look up bridge %s: %w", cfg.Name, err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = cfg.Name
	attrs.HardwareAddr = cfg.MAC
	if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
		return nil, fmt.Errorf("create bridge %s: %w", cfg.Name, err)
	}
	link, err = netlink.LinkByName(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("look up new bridge %s: %w", cfg.Name, err)
	}
	return link, nil
}

// ensureCapturePair makes BridgeIface<->PcapIface exist with the MTU, the
// bridge end enslaved, both up. A half-made pair is replaced.
func ensureCapturePair(cfg BridgeConfig, br netlink.Link) error {
	port, portErr := netlink.LinkByName(cfg.BridgeIface)
	pcap, pcapErr := netlink.LinkByName(cfg.PcapIface)
	if portErr != nil || pcapErr != nil || !isVeth(port) || !isVeth(pcap) {
		for _, name := range []string{cfg.BridgeIface, cfg.PcapIface} {
			if err := deleteLink(name); err != nil {
				return err
			}
		}
		if err := createVeth(cfg.BridgeIface, cfg.PcapIface, cfg.MTU, nil); err != nil {
			return err
		}
		var err error
		if port, err = netlink.LinkByName(cfg.BridgeIface); err != nil {
			return fmt.Errorf("look up %s: %w", cfg.BridgeIface, err)
		}
		if pcap, err = netlink.LinkByName(cfg.PcapIface); err != nil {
			return fmt.Errorf("look up %s: %w", cfg.PcapIface, err)
		}
	}
	for _, l := range []netlink.Link{port, pcap} {
		if err := setMTU(l, cfg.MTU); err != nil {
			return err
		}
	}
	if err := enslave(port, br); err != nil {
		return err
	}
	for _, l := range []netlink.Link{port, pcap} {
		disableIPv6(l.Attrs().Name)
		if err := setUp(l); err != nil {
			return err
		}
	}
	return nil
}

// configureBridge sets the bridge's MAC and MTU and brings it up.
func configureBridge(cfg BridgeConfig, br netlink.Link) error {
	if cfg.MAC != nil && br.Attrs().HardwareAddr.String() != cfg.MAC.String() {
		if err := netlink.LinkSetHardwareAddr(br, cfg.MAC); err != nil {
			return fmt.Errorf("set MAC %s on bridge %s: %w", cfg.MAC, cfg.Name, err)
		}
	}
	if err := setMTU(br, cfg.MTU); err != nil {
		return err
	}
	return setUp(br)
}

// createVeth adds a veth pair with the MTU on both ends and an optional MAC
// for the peer.
func createVeth(name, peer string, mtu int, peerMAC []byte) error {
	return createVethPeerIn(name, peer, mtu, peerMAC, nil)
}

// createVethPeerIn is createVeth with the peer created directly in the
// namespace peerNS (a netlink.NsFd; nil: this one). Creating it there is
// one netlink request; moving it afterwards (RTM_SETLINK IFLA_NET_NS_FD)
// waits for an RCU grace period while holding the RTNL, which serializes
// concurrent attaches host-wide.
func createVethPeerIn(name, peer string, mtu int, peerMAC []byte, peerNS any) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	attrs.MTU = mtu
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: peer, PeerMTU: uint32(mtu), PeerHardwareAddr: peerMAC, PeerNamespace: peerNS}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s<->%s: %w", name, peer, err)
	}
	return nil
}

// DestroyBridge deletes the bridge, the capture pair and every container
// veth (vethwepl*, and the Docker plugin's vethwl*) still enslaved to it. Missing objects are not an error.
func DestroyBridge(name string) error {
	if name == "" {
		name = DefaultBridge
	}
	var errs []error
	if br, err := netlink.LinkByName(name); err == nil {
		errs = append(errs, deletePorts(br))
	} else if !isNotFound(err) {
		errs = append(errs, fmt.Errorf("look up bridge %s: %w", name, err))
	}
	for _, n := range []string{DefaultBridgeIface, DefaultPcapIface, name} {
		errs = append(errs, deleteLink(n))
	}
	return errors.Join(errs...)
}

// deletePorts deletes the container veths enslaved to br.
func deletePorts(br netlink.Link) error {
	links, err := nlsafe.LinkList(nil)
	if err != nil {
		return fmt.Errorf("list links: %w", err)
	}
	var errs []error
	for _, l := range links {
		a := l.Attrs()
		own := strings.HasPrefix(a.Name, ContainerVethPrefix) || strings.HasPrefix(a.Name, EndpointVethPrefix) || strings.HasPrefix(a.Name, BridgeLinkPrefix)
		if a.MasterIndex == br.Attrs().Index && own {
			errs = append(errs, deleteLink(a.Name))
		}
	}
	return errors.Join(errs...)
}

// deleteLink deletes name; a missing link is not an error.
// DeleteLink deletes the link name in the calling namespace (for a veth,
// both ends go); a missing link is not an error.
func DeleteLink(name string) error { return deleteLink(name) }

func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

func setMTU(l netlink.Link, mtu int) error {
	if l.Attrs().MTU == mtu {
		return nil
	}
	if err := netlink.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("set MTU %d on %s: %w", mtu, l.Attrs().Name, err)
	}
	return nil
}

func setUp(l netlink.Link) error {
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up: %w", l.Attrs().Name, err)
	}
	return nil
}

func enslave(l, br netlink.Link) error {
	if l.Attrs().MasterIndex == br.Attrs().Index {
		return nil
	}
	if err := netlink.LinkSetMaster(l, br); err != nil {
		return fmt.Errorf("enslave %s to %s: %w", l.Attrs().Name, br.Attrs().Name, err)
	}
	return nil
}

// disableIPv6 stops a bridge port from getting link-local addresses and
// sending router solicitations. Best effort: IPv6 may be absent.
func disableIPv6(ifname string) {
	_ = setSysctl("net/ipv6/conf/"+ifname+"/disable_ipv6", "1")
}

func isVeth(l netlink.Link) bool {
	_, ok := l.(*netlink.Veth)
	return ok
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}
