package fastdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/seedf75a49c6/weave/internal/nlsafe"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// netlinkKernel is the Linux Kernel.
type netlinkKernel struct{}

// NewKernel returns the netlink/AF_PACKET implementation of Kernel.
func NewKernel() Kernel { return netlinkKernel{} }

// probeVNI is the VNI of the throwaway probe device; 24 bits, above the
// 0..2^24-1 range our pairs of 12-bit short IDs use only at the very top.
const probeVNI = 0xfffffe

func (netlinkKernel) Probe() error {
	name := "vxw-probe"
	_ = netlinkKernel{}.DelLink(name)
	if err := newVXLAN(VXLANSpec{Name: name, VNI: probeVNI, Port: 0, MTU: 1450}, 0); err != nil {
		return fmt.Errorf("create probe vxlan device %s: %w", name, err)
	}
	if err := (netlinkKernel{}).DelLink(name); err != nil {
		return fmt.Errorf("delete probe vxlan device %s: %w", name, err)
	}
	return nil
}

func (netlinkKernel) AddVXLAN(s VXLANSpec) error {
	br, err := netlink.LinkByName(s.Bridge)
	if err != nil {
		return fmt.Errorf("find bridge %s: %w", s.Bridge, err)
	}
	if err := newVXLAN(s, br.Attrs().Index); err != nil {
		return fmt.Errorf("create vxlan device %s: %w", s.Name, err)
	}
	l, err := netlink.LinkByName(s.Name)
	if err != nil {
		return fmt.Errorf("find vxlan device %s: %w", s.Name, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set vxlan device %s up: %w", s.Name, withErrno(err))
	}
	return nil
}

// newVXLAN sends RTM_NEWLINK itself: the netlink library has no DF
// attribute, and DF is what makes the full-MTU heartbeat an MTU check.
func newVXLAN(s VXLANSpec, master int) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(s.Name)))
	req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(s.MTU))))
	if master > 0 {
		req.AddData(nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(master))))
	}
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("vxlan"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(unix.IFLA_VXLAN_ID, nl.Uint32Attr(s.VNI))
	v6 := s.Local.Is6()
	switch {
	case s.Local.Is4():
		ip := s.Local.As4()
		data.AddRtAttr(unix.IFLA_VXLAN_LOCAL, ip[:])
	case v6:
		// An IPv6 local address makes the device IPv6: it sends from
		// the kernel's [::]:port socket (IPV6_V6ONLY, beside the IPv4
		// one) and takes only IPv6 FDB destinations.
		ip := s.Local.As16()
		data.AddRtAttr(unix.IFLA_VXLAN_LOCAL6, ip[:])
	}
	port := make([]byte, 2)
	binary.BigEndian.PutUint16(port, uint16(s.Port))
	data.AddRtAttr(unix.IFLA_VXLAN_PORT, port)
	data.AddRtAttr(unix.IFLA_VXLAN_LEARNING, []byte{0})
	data.AddRtAttr(unix.IFLA_VXLAN_TTL, []byte{64})
	if !v6 {
		// IPv4 only: the outer DF bit and zero UDP checksums. Over IPv6
		// the checksum stays (see VXLANSpec.String) and there is no DF.
		data.AddRtAttr(unix.IFLA_VXLAN_UDP_CSUM, []byte{0})
		data.AddRtAttr(unix.IFLA_VXLAN_DF, []byte{1}) // VXLAN_DF_SET
	}
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return withErrno(err)
}

// withErrno adds the errno's name to a kernel refusal, so that the reason
// a link shows (its fallback to sleeve) names exactly what the kernel said.
func withErrno(err error) error {
	var en unix.Errno
	if err == nil || !errors.As(err, &en) {
		return err
	}
	if name := unix.ErrnoName(en); name != "" {
		return fmt.Errorf("%w (%s)", err, name)
	}
	return err
}

func (netlinkKernel) SetPort(dev string, f PortFlags) error {
	attrs := []struct {
		typ int
		on  bool
	}{
		{unix.IFLA_BRPORT_ISOLATED, f.Isolated}, {unix.IFLA_BRPORT_LEARNING, f.Learning},
		{unix.IFLA_BRPORT_UNICAST_FLOOD, f.Flood}, {unix.IFLA_BRPORT_MCAST_FLOOD, f.McastFlood},
		{unix.IFLA_BRPORT_BCAST_FLOOD, f.BcastFlood},
	}
	pi := nl.NewRtAttr(unix.IFLA_PROTINFO|unix.NLA_F_NESTED, nil)
	for _, a := range attrs {
		pi.AddRtAttr(a.typ, boolByte(a.on))
	}
	if f.Flush {
		pi.AddRtAttr(unix.IFLA_BRPORT_FLUSH, nil)
	}
	if err := setProtinfo(dev, pi); err != nil {
		return fmt.Errorf("set bridge port flags of %s: %w", dev, err)
	}
	return nil
}

func (netlinkKernel) SetIsolated(dev string, on bool) error {
	pi := nl.NewRtAttr(unix.IFLA_PROTINFO|unix.NLA_F_NESTED, nil)
	pi.AddRtAttr(unix.IFLA_BRPORT_ISOLATED, boolByte(on))
	if err := setProtinfo(dev, pi); err != nil {
		return fmt.Errorf("set isolated=%v on bridge port %s: %w", on, dev, err)
	}
	return nil
}

func setProtinfo(dev string, pi *nl.RtAttr) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return err
	}
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_BRIDGE)
	msg.Index = int32(l.Attrs().Index)
	req.AddData(msg)
	req.AddData(pi)
	_, err = req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

func boolByte(b bool) []byte {
	if b {
		return []byte{1}
	}
	return []byte{0}
}

func (netlinkKernel) AppendFDB(e FDBEntry) error {
	l, err := netlink.LinkByName(e.Dev)
	if err != nil {
		return fmt.Errorf("find %s: %w", e.Dev, err)
	}
	n := &netlink.Neigh{
		LinkIndex: l.Attrs().Index, Family: unix.AF_BRIDGE,
		State: netlink.NUD_PERMANENT | netlink.NUD_NOARP, Flags: netlink.NTF_SELF,
		IP: net.IP(e.Dst.AsSlice()), HardwareAddr: net.HardwareAddr(e.MAC[:]), VNI: int(e.VNI),
	}
	if err := netlink.NeighAppend(n); err != nil {
		return fmt.Errorf("append fdb entry to %s: %w", e.Dev, withErrno(err))
	}
	return nil
}

func (netlinkKernel) DelLink(dev string) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("find link %s: %w", dev, err)
	}
	if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete link %s: %w", dev, err)
	}
	return nil
}

func (netlinkKernel) Links(prefix string) ([]string, error) {
	ls, err := nlsafe.LinkList(nil)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var out []string
	for _, l := range ls {
		if strings.HasPrefix(l.Attrs().Name, prefix) {
			out = append(out, l.Attrs().Name)
		}
	}
	return out, nil
}

func (netlinkKernel) OpenPacket(dev string) (PacketConn, error) {
	c, err := openPacket(dev)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// packetConn is an AF_PACKET socket bound to one device, registered with
// the runtime poller so Close wakes a blocked read.
type packetConn struct{ f *os.File }

// zeroSrcFilter accepts frames whose source MAC (bytes 6..11) is all zero.
// The socket must be ETH_P_ALL: only those taps run before the bridge's
// rx_handler, which drops zero-source frames (a socket bound to a specific
// ethertype would never see a heartbeat on a bridge port). The filter
// keeps the per-packet cost for data frames to a few BPF instructions.
var zeroSrcFilter = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 6},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 3, K: 0},
	{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 10},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: 0},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0xffff},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openPacket(dev string) (*packetConn, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, fmt.Errorf("find interface %s: %w", dev, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("open packet socket on %s: %w", dev, err)
	}
	prog := unix.SockFprog{Len: uint16(len(zeroSrcFilter)), Filter: &zeroSrcFilter[0]}
	if err := setupPacket(fd, ifi.Index, &prog); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("set up packet socket on %s: %w", dev, err)
	}
	return &packetConn{f: os.NewFile(uintptr(fd), "packet:"+dev)}, nil
}

func setupPacket(fd, ifindex int, prog *unix.SockFprog) error {
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, prog); err != nil {
		return fmt.Errorf("attach filter: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("ignore outgoing: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

func (c *packetConn) ReadFrame(buf []byte) (int, error) { return c.f.Read(buf) }

func (c *packetConn) WriteFrame(frame []byte) error {
	_, err := c.f.Write(frame)
	return err
}

func (c *packetConn) Close() error { return c.f.Close() }
