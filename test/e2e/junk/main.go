// Command junk throws malformed traffic at a weave router's TCP and UDP
// ports for the robustness end-to-end test: random bytes, truncated
// protocol headers, a valid "weave" header followed by junk, absurd frame
// lengths, idle connections, and random, empty and oversized datagrams.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"time"
)

func main() {
	target := flag.String("target", "", "router address host:port (TCP and UDP)")
	seed := flag.Uint64("seed", 1, "random seed")
	rounds := flag.Int("rounds", 3, "how many times to repeat the whole set")
	flag.Parse()
	if err := run(*target, *seed, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "junk:", err)
		os.Exit(1)
	}
}

func run(target string, seed uint64, rounds int) error {
	if target == "" {
		return errors.New("need -target")
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5745415645))
	for r := 0; r < rounds; r++ {
		for i, payload := range tcpPayloads(rng) {
			// Refused or reset connections are fine; the router may hang up.
			if err := sendTCP(target, payload); err != nil {
				fmt.Fprintf(os.Stderr, "tcp payload %d: %v\n", i, err)
			}
		}
		if err := sendUDP(target, udpPayloads(rng)); err != nil {
			return err
		}
	}
	return nil
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// header is a valid protocol header: "weave", min version 1, max 2.
var header = []byte("weave\x01\x02")

func tcpPayloads(rng *rand.Rand) [][]byte {
	lenHuge := binary.BigEndian.AppendUint32(nil, 0xffffffff)
	return [][]byte{
		randBytes(rng, 1+rng.IntN(4096)),
		[]byte("wea"),
		header[:6],
		[]byte("weave\x09\x09"), // versions we do not speak
		append(append([]byte{}, header...), randBytes(rng, 512)...),
		append(append(append([]byte{}, header...), 0), lenHuge...),               // plaintext, absurd length
		append(append(append([]byte{}, header...), 0), 0, 0, 0, 40),              // length, then short body
		append(append(append([]byte{}, header...), 1), randBytes(rng, 32+64)...), // bogus key + junk
		append(append([]byte{}, header...), 7),                                   // invalid crypto flag
		{},                                                                       // connect and say nothing
	}
}

func sendTCP(target string, payload []byte) error {
	c, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		return fmt.Errorf("dial %s: %w", target, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	if len(payload) > 0 {
		if _, err := c.Write(payload); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	// Read whatever the router answers until it hangs up or the deadline.
	buf := make([]byte, 256)
	for {
		if _, err := c.Read(buf); err != nil {
			return nil
		}
	}
}

func udpPayloads(rng *rand.Rand) [][]byte {
	p := [][]byte{{}, {0}, randBytes(rng, 7), randBytes(rng, 1400), randBytes(rng, 9000), randBytes(rng, 60000)}
	for i := 0; i < 50; i++ {
		p = append(p, randBytes(rng, rng.IntN(2000)))
	}
	return p
}

func sendUDP(target string, payloads [][]byte) error {
	c, err := net.Dial("udp", target)
	if err != nil {
		return fmt.Errorf("dial udp %s: %w", target, err)
	}
	defer c.Close()
	for _, p := range payloads {
		// ICMP port unreachable surfaces as a write error; keep going.
		_, _ = c.Write(p)
	}
	return nil
}
