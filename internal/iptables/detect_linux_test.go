//go:build linux

package iptables

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestDetectInNamespaces: in a fresh namespace whose rules live in one
// backend, Detect picks that backend.
func TestDetectInNamespaces(t *testing.T) {
	netnstest.RequireTools(t, "iptables-legacy", "iptables-nft", "iptables-legacy-save", "iptables-nft-save")
	for _, b := range []Backend{Legacy, NFT} {
		t.Run(string(b), func(t *testing.T) {
			_, path := netnstest.NewNS(t)
			err := netns.Do(path, func() error {
				for i := range 3 {
					rule := []string{"-A", "INPUT", "-s", fmt.Sprintf("10.9.9.%d", i+1), "-j", "ACCEPT"}
					if out, err := exec.Command(b.Command("iptables"), rule...).CombinedOutput(); err != nil {
						return fmt.Errorf("%s: %w: %s", b.Command("iptables"), err, out)
					}
				}
				got, counts, err := Detect(context.Background())
				if err != nil {
					return err
				}
				if got != b || (b == Legacy && counts.Legacy < 3) || (b == NFT && counts.NFT < 3) {
					return fmt.Errorf("Detect = %q %+v, want %q with its 3 rules counted", got, counts, b)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
