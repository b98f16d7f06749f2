package mesh

import (
	"bytes"
	"encoding/gob"
	"fmt"

	wmesh "github.com/weaveworks/mesh"
)

// TopologyPeer is one peer of a topology gossip message.
type TopologyPeer struct {
	Name        wmesh.PeerName
	NickName    string
	UID         uint64
	Version     uint64
	ShortID     uint16
	HasShortID  bool
	Connections []TopologyConnection
}

// TopologyConnection is one connection of a TopologyPeer.
type TopologyConnection struct {
	Name          wmesh.PeerName
	RemoteTCPAddr string
	Outbound      bool
	Established   bool
}

// peerSummary and connectionSummary mirror the mesh library's gob types.
// Gob sends struct type names and field names, so both the names and the
// field kinds must stay exactly as they are for byte compatibility.
type peerSummary struct {
	NameByte   []byte
	NickName   string
	UID        uint64
	Version    uint64
	ShortID    uint16
	HasShortID bool
}

type connectionSummary struct {
	NameByte      []byte
	RemoteTCPAddr string
	Outbound      bool
	Established   bool
}

// EncodeTopology encodes peers as the topology gossip payload: one gob
// encoder, per peer a peerSummary followed by a []connectionSummary.
func EncodeTopology(peers []TopologyPeer) ([]byte, error) {
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	for _, p := range peers {
		ps := peerSummary{NameByte: peerNameBytes(p.Name), NickName: p.NickName, UID: p.UID,
			Version: p.Version, ShortID: p.ShortID, HasShortID: p.HasShortID}
		conns := make([]connectionSummary, 0, len(p.Connections))
		for _, c := range p.Connections {
			conns = append(conns, connectionSummary{NameByte: peerNameBytes(c.Name),
				RemoteTCPAddr: c.RemoteTCPAddr, Outbound: c.Outbound, Established: c.Established})
		}
		if err := enc.Encode(&ps); err != nil {
			return nil, fmt.Errorf("encode topology peer %s: %w", p.Name, err)
		}
		if err := enc.Encode(conns); err != nil {
			return nil, fmt.Errorf("encode topology connections of %s: %w", p.Name, err)
		}
	}
	return buf.Bytes(), nil
}

// DecodeTopology decodes a topology gossip payload. Peer names must be 6
// bytes (the "mac" flavour).
func DecodeTopology(b []byte) ([]TopologyPeer, error) {
	dec := gob.NewDecoder(bytes.NewReader(b))
	var peers []TopologyPeer
	for {
		var ps peerSummary // fresh each time: gob leaves absent fields alone
		if err := dec.Decode(&ps); err != nil {
			if errEOF(err) && len(peers) > 0 || len(b) == 0 {
				return peers, nil
			}
			return nil, fmt.Errorf("decode topology peer %d: %w", len(peers), err)
		}
		if len(ps.NameByte) != PeerNameLen {
			return nil, fmt.Errorf("decode topology peer %d (%d bytes): %w", len(peers), len(ps.NameByte), ErrBadPeerLen)
		}
		var conns []connectionSummary
		if err := dec.Decode(&conns); err != nil {
			return nil, fmt.Errorf("decode topology connections of peer %d: %w", len(peers), err)
		}
		p := TopologyPeer{Name: peerNameFromBytes(ps.NameByte), NickName: ps.NickName, UID: ps.UID,
			Version: ps.Version, ShortID: ps.ShortID, HasShortID: ps.HasShortID}
		for i, c := range conns {
			if len(c.NameByte) != PeerNameLen {
				return nil, fmt.Errorf("decode topology connection %d of %s (%d bytes): %w", i, p.Name, len(c.NameByte), ErrBadPeerLen)
			}
			p.Connections = append(p.Connections, TopologyConnection{Name: peerNameFromBytes(c.NameByte),
				RemoteTCPAddr: c.RemoteTCPAddr, Outbound: c.Outbound, Established: c.Established})
		}
		peers = append(peers, p)
	}
}
