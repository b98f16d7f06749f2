package fastdp

import (
	"encoding/binary"
	"errors"
)

// Heartbeat frame: an Ethernet frame with all-zero MACs and ethertype,
// then the connection UID (8 bytes, big endian) and the frame's total
// length (uint16, big endian), zero padded to that length. Two sizes are
// sent: smallHeartbeatLen, which proves UDP reachability, and 14 + MTU,
// which proves the path carries full-size frames (the devices set DF).
//
//	0            12    14          22      24
//	| 0 MACs     | 0 0 | conn UID  | len   | zero padding ... |
const (
	hbHeaderLen       = 14
	hbMinLen          = hbHeaderLen + 8 + 2
	smallHeartbeatLen = 64

	// tagHeartbeatAck acknowledges a heartbeat; body = uint16 BE length
	// of the heartbeat received.
	tagHeartbeatAck byte = 0
)

var errBadHeartbeat = errors.New("not a heartbeat")

// putHeartbeat fills buf (len(buf) = the frame length) with a heartbeat.
func putHeartbeat(buf []byte, uid uint64) {
	clear(buf)
	binary.BigEndian.PutUint64(buf[hbHeaderLen:], uid)
	binary.BigEndian.PutUint16(buf[hbHeaderLen+8:], uint16(len(buf)))
}

// parseHeartbeat validates frame as a heartbeat and returns its UID and
// length.
func parseHeartbeat(frame []byte) (uid uint64, n int, err error) {
	if len(frame) < hbMinLen {
		return 0, 0, errBadHeartbeat
	}
	for _, b := range frame[:hbHeaderLen] {
		if b != 0 {
			return 0, 0, errBadHeartbeat
		}
	}
	n = int(binary.BigEndian.Uint16(frame[hbHeaderLen+8:]))
	if n != len(frame) {
		return 0, 0, errBadHeartbeat
	}
	return binary.BigEndian.Uint64(frame[hbHeaderLen:]), n, nil
}

func ackBody(n int) []byte {
	b := make([]byte, 2)
	binary.BigEndian.PutUint16(b, uint16(n))
	return b
}
