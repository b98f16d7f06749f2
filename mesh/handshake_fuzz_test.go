package mesh

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"
)

// Fuzz targets for the handshake of a live (patched) router, before and
// after authentication. Each input goes over its own TCP connection from
// its own loopback source; the router must close it (it half-closes after
// writing) within fuzzCloseAfter, must not crash the process, and must not
// grow the heap past fuzzHeapLimit.

const (
	fuzzCloseAfter = 25 * time.Second // handshakeTimeout is 20 s
	fuzzHeapLimit  = 512 << 20
)

var fuzzRouters struct {
	sync.Mutex
	byPW map[string]string // password -> address
	src  atomic.Uint32
}

// fuzzRouter starts (once per password) a router that lives as long as
// the fuzz process.
func fuzzRouter(t *testing.T, password string) string {
	requirePatchedLibrary(t) // the seeds would take an unpatched in-process router to gigabytes
	fuzzRouters.Lock()
	defer fuzzRouters.Unlock()
	if addr, ok := fuzzRouters.byPW[password]; ok {
		return addr
	}
	var pw []byte
	if password != "" {
		pw = []byte(password)
	}
	port := freePort(t)
	cfg := wmesh.Config{Host: "127.0.0.1", Port: port, Password: pw, ConnLimit: 64, ProtocolMinVersion: 1}
	r, err := wmesh.NewRouter(cfg, wmesh.PeerName(0x020000000e01+uint64(len(fuzzRouters.byPW))), "fuzz", wmesh.NullOverlay{}, Logger(nil))
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	if fuzzRouters.byPW == nil {
		fuzzRouters.byPW = map[string]string{}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	fuzzRouters.byPW[password] = addr
	return addr
}

// fuzzSource is a fresh loopback source address, so the per-source
// limits never refuse a fuzz input before the handshake.
func fuzzSource() string {
	n := fuzzRouters.src.Add(1)
	return fmt.Sprintf("127.%d.%d.%d", 2+byte(n>>16), byte(n>>8), 1+byte(n)%254)
}

// sendAndAwaitClose writes data on conn, half-closes, and requires the
// router to close its end in time.
func sendAndAwaitClose(t *testing.T, conn net.Conn, data []byte) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(fuzzCloseAfter))
	_, _ = conn.Write(data)
	_ = conn.(*net.TCPConn).CloseWrite()
	if _, err := io.Copy(io.Discard, conn); err != nil && !isReset(err) {
		t.Fatalf("router did not close the connection: %v", err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > fuzzHeapLimit {
		t.Fatalf("heap in use %d MiB after the input", ms.HeapInuse>>20)
	}
}

func fuzzPreAuth(t *testing.T, password string, prefix, data []byte) {
	conn, err := dialFrom(fuzzSource(), fuzzRouter(t, password))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sendAndAwaitClose(t, conn, cat(prefix, data))
}

// FuzzHandshakeV1PreAuth: whatever follows a V1 header (the features gob
// stream), with and without a password: nothing is authenticated yet.
func FuzzHandshakeV1PreAuth(f *testing.F) {
	feat, err := EncodeFeatures(map[string]string{"PeerNameFlavour": "mac", "Name": "02:00:00:00:0e:99",
		"NickName": "f", "UID": "1", "ConnID": "2"})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{feat, mapBomb(1 << 26), appendGobUint(nil, 1<<30), {}} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, withPassword bool) {
		fuzzPreAuth(t, map[bool]string{true: "fuzz-secret"}[withPassword], []byte("weave\x01\x01"), data)
	})
}

// FuzzHandshakeV2PreAuth: the encryption flag, key and length-prefixed
// features message after a V2 header.
func FuzzHandshakeV2PreAuth(f *testing.F) {
	b := mapBomb(1 << 26)
	for _, seed := range [][]byte{cat([]byte{0}, be32(uint32(len(b))), b), cat([]byte{0}, be32(MaxTCPMsgSize)),
		cat([]byte{1}, make([]byte, 32), be32(64), make([]byte, 64)), {7}} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, withPassword bool) {
		fuzzPreAuth(t, map[bool]string{true: "fuzz-secret"}[withPassword], EncodeProtocolHeader(1, 2), data)
	})
}

// FuzzHandshakeV2PostAuth: a client that completed the encrypted
// handshake (it knows the password) sends one sealed message of fuzzed
// content: gossip, overlay control or junk, all after authentication.
func FuzzHandshakeV2PostAuth(f *testing.F) {
	f.Add([]byte{TagHeartbeat})
	f.Add([]byte{TagGossip, 0x0c, 0xff, 0xff})
	f.Add(append([]byte{TagGossip}, mapBomb(1<<26)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		addr := fuzzRouter(t, "fuzz-secret")
		n := fuzzRouters.src.Add(1)
		ours := wmesh.PeerName(0x020000100000 + uint64(n))
		w := dialWire(t, addr, []byte("fuzz-secret"), ours, false)
		w.introduce(ours, "fuzz")
		sealed := w.send.Seal(msg)
		frame, err := EncodeFrame(sealed)
		if err != nil {
			t.Fatal(err)
		}
		sendAndAwaitClose(t, w.c, frame)
	})
}

var patchedOnce struct {
	sync.Once
	err error
}

// requirePatchedLibrary fails the test unless the mesh library carries
// weave's patch (checked once: a stopped router must refuse connections),
// before any in-process router meets an input that would make the
// unpatched one allocate gigabytes.
func requirePatchedLibrary(t *testing.T) {
	t.Helper()
	patchedOnce.Do(func() {
		port := freePort(t)
		cfg := wmesh.Config{Host: "127.0.0.1", Port: port, ConnLimit: 8, ProtocolMinVersion: 1}
		r, err := wmesh.NewRouter(cfg, wmesh.PeerName(0x020000000eff), "probe", wmesh.NullOverlay{}, Logger(nil))
		if err != nil {
			patchedOnce.err = err
			return
		}
		r.Start()
		_ = r.Stop()
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second); err == nil {
			c.Close()
			patchedOnce.err = fmt.Errorf("listener still open after Stop; %s", unpatchedHint)
		}
	})
	if patchedOnce.err != nil {
		t.Fatal(patchedOnce.err)
	}
}
