package mesh

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"
	"golang.org/x/crypto/nacl/box"
)

// wireClient speaks the mesh TCP protocol using only this package's codecs
// (no code from the library), as the dialling side.
type wireClient struct {
	t          *testing.T
	c          net.Conn
	r          *bufio.Reader
	send, recv *TCPCipher
}

const testClientUID = "424242"

func dialWire(t *testing.T, addr string, password []byte, name wmesh.PeerName, swapPolarity bool) *wireClient {
	t.Helper()
	c, err := dialFrom(randomLoopback(t), addr) // its own source: per-source limits
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	w := &wireClient{t: t, c: c, r: bufio.NewReader(c)}
	w.write(EncodeProtocolHeader(1, 2))
	if lo, hi, err := DecodeProtocolHeader(w.read(ProtocolHeaderLen)); err != nil || lo != 1 || hi != 2 {
		t.Fatalf("router header (%d,%d): %v", lo, hi, err)
	}
	if password == nil {
		w.write([]byte{0})
		if f := w.read(1); f[0] != 0 {
			t.Fatalf("router encryption flag %d, want 0", f[0])
		}
		return w
	}
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w.write(append([]byte{1}, pub[:]...))
	got := w.read(33)
	if got[0] != 1 {
		t.Fatalf("router encryption flag %d, want 1", got[0])
	}
	key := SessionKey((*[32]byte)(got[1:]), priv, password)
	w.send, w.recv = NewTCPCipher(key, !swapPolarity), NewTCPCipher(key, swapPolarity)
	return w
}

func (w *wireClient) write(b []byte) {
	w.t.Helper()
	if _, err := w.c.Write(b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

func (w *wireClient) read(n int) []byte {
	w.t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(w.r, b); err != nil {
		w.t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

func (w *wireClient) writeMsg(body []byte) {
	w.t.Helper()
	if w.send != nil {
		body = w.send.Seal(body)
	}
	frame, err := EncodeFrame(body)
	if err != nil {
		w.t.Fatal(err)
	}
	w.write(frame)
}

func (w *wireClient) readMsg() []byte {
	w.t.Helper()
	n := binary.BigEndian.Uint32(w.read(4))
	if n > MaxTCPMsgSize {
		w.t.Fatalf("router sent a %d-byte frame", n)
	}
	body := w.read(int(n))
	if w.recv != nil {
		var err error
		if body, err = w.recv.Open(body); err != nil {
			w.t.Fatal(err)
		}
	}
	return body
}

func (w *wireClient) introduce(name wmesh.PeerName, nick string) map[string]string {
	w.t.Helper()
	f, err := EncodeFeatures(map[string]string{"PeerNameFlavour": "mac", "Name": name.String(),
		"NickName": nick, "UID": testClientUID, "ConnID": "99", "ShortID": "7"})
	if err != nil {
		w.t.Fatal(err)
	}
	w.writeMsg(f)
	theirs, err := DecodeFeatures(w.readMsg())
	if err != nil {
		w.t.Fatal(err)
	}
	return theirs
}

// TestWireClientInteropsWithLiveRouter handshakes with a real mesh router
// using only our codecs (plain and NaCl-encrypted), decodes the router's
// topology gossip, and sends our own topology gossip, which the router
// must accept and apply.
func TestWireClientInteropsWithLiveRouter(t *testing.T) {
	for i, pw := range [][]byte{nil, []byte("vector-secret")} {
		router := startRouter(t, "02:00:00:00:0f:0"+string(rune('1'+i)), "live", pw)
		ours := mustName(t, "02:00:00:00:0f:1"+string(rune('1'+i)))
		w := dialWire(t, router.addr(), pw, ours, false)
		feat := w.introduce(ours, "wire")
		if feat["Name"] != router.Ourself.Name.String() || feat["PeerNameFlavour"] != "mac" || feat["ConnID"] == "" {
			t.Fatalf("router features %v", feat)
		}
		topo := w.awaitTopology(ours)
		// Peers come out of a Go map in the router: any order.
		found := false
		for _, p := range topo {
			found = found || p.Name == router.Ourself.Name
		}
		if !found {
			t.Fatalf("router topology lacks the router itself (%s): %+v", router.Ourself.Name, topo)
		}
		w.writeMsg([]byte{TagHeartbeat})
		w.sendTopology(ours, router)
		waitFor(t, 10*time.Second, "router applied our topology", func() bool {
			for _, p := range wmesh.NewStatus(router.Router).Peers {
				if p.Name == ours.String() && p.NickName == "wire" && p.Version == 5 && len(p.Connections) == 1 {
					return true
				}
			}
			return false
		})
	}
}

// awaitTopology reads messages until the router's topology gossip lists
// a connection to us.
func (w *wireClient) awaitTopology(ours wmesh.PeerName) []TopologyPeer {
	w.t.Helper()
	for {
		body := w.readMsg()
		if len(body) == 0 || body[0] != TagGossip {
			continue
		}
		env, err := DecodeGossipEnvelope(body[0], body[1:])
		if err != nil {
			w.t.Fatal(err)
		}
		if env.Channel != "topology" {
			continue
		}
		peers, err := DecodeTopology(env.Msg)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, p := range peers {
			for _, c := range p.Connections {
				if c.Name == ours {
					return peers
				}
			}
		}
	}
}

func (w *wireClient) sendTopology(ours wmesh.PeerName, router *testRouter) {
	w.t.Helper()
	payload, err := EncodeTopology([]TopologyPeer{{Name: ours, NickName: "wire", UID: 424242, Version: 5,
		ShortID: 7, HasShortID: true, Connections: []TopologyConnection{{Name: router.Ourself.Name,
			RemoteTCPAddr: router.addr(), Outbound: true, Established: true}}}})
	if err != nil {
		w.t.Fatal(err)
	}
	env, err := EncodeGossipEnvelope(GossipEnvelope{Tag: TagGossip, Channel: "topology", Src: ours, Msg: payload})
	if err != nil {
		w.t.Fatal(err)
	}
	w.writeMsg(append([]byte{TagGossip}, env...))
}

// TestWireClientWrongNoncePolarity checks that the nonce polarity bit is
// load-bearing: sealing as the accepting side makes the router refuse.
func TestWireClientWrongNoncePolarity(t *testing.T) {
	router := startRouter(t, "02:00:00:00:0f:21", "live", []byte("pw"))
	w := dialWire(t, router.addr(), []byte("pw"), mustName(t, "02:00:00:00:0f:22"), true)
	f, err := EncodeFeatures(map[string]string{"PeerNameFlavour": "mac"})
	if err != nil {
		t.Fatal(err)
	}
	w.writeMsg(f)
	local := w.c.LocalAddr().String()
	waitFor(t, 10*time.Second, "router rejects the message", func() bool {
		return strings.Contains(lineWith(router.log.String(), "->["+local+"]"+" connection shutting down"),
			"Unable to decrypt TCP msg")
	})
}
