package sleeve

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg appends one control message (level, type, data) to b, padded.
func cmsg(b []byte, level, typ int32, data []byte, lenOverride int) []byte {
	h := make([]byte, unix.CmsgSpace(len(data)))
	c := (*unix.Cmsghdr)(unsafe.Pointer(&h[0]))
	c.Level, c.Type = level, typ
	c.SetLen(unix.CmsgLen(len(data)))
	if lenOverride >= 0 {
		c.SetLen(lenOverride)
	}
	copy(h[unix.SizeofCmsghdr:], data)
	return append(b, h...)
}

func le32(v int32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, uint32(v))
	return b
}

// TestGROSegmentCmsg: the UDP_GRO segment size is found after other control
// messages; a malformed control buffer (a length shorter than the header,
// past the buffer's end, zero, a truncated value) yields 0 (one datagram)
// and never loops or reads out of bounds.
func TestGROSegmentCmsg(t *testing.T) {
	gro := func(v int32) []byte { return cmsg(nil, unix.IPPROTO_UDP, unix.UDP_GRO, le32(v), -1) }
	tos := cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x10}, -1)
	for _, tc := range []struct {
		name string
		oob  []byte
		want int
	}{
		{"none", nil, 0},
		{"gro", gro(1400), 1400},
		{"after another", append(append([]byte{}, tos...), gro(1372)...), 1372},
		{"other only", tos, 0},
		{"zero length", cmsg(nil, unix.IPPROTO_UDP, unix.UDP_GRO, le32(1400), 0), 0},
		{"length past the end", cmsg(nil, unix.IPPROTO_UDP, unix.UDP_GRO, le32(1400), 4096), 0},
		{"value cut short", cmsg(nil, unix.IPPROTO_UDP, unix.UDP_GRO, []byte{1, 2}, -1), 0},
		{"header cut short", gro(1400)[:unix.SizeofCmsghdr-1], 0},
		{"gro after a bad one", append(cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, nil, 3), gro(1400)...), 0},
	} {
		if got := groSegment(tc.oob); got != tc.want {
			t.Errorf("%s: groSegment = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// FuzzGROSegment: any control buffer parses without a panic.
func FuzzGROSegment(f *testing.F) {
	f.Add(cmsg(nil, unix.IPPROTO_UDP, unix.UDP_GRO, le32(1400), -1))
	f.Add(cmsg(cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{1}, -1), unix.IPPROTO_UDP, unix.UDP_GRO, le32(9000), -1))
	f.Fuzz(func(t *testing.T, oob []byte) {
		if len(oob) > 0 { // the kernel's buffers are cmsghdr-aligned
			oob = append(make([]byte, 0, len(oob)+8), oob...)
		}
		_ = groSegment(oob)
	})
}
