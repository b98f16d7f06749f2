package iptables

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Backend{"": Default, "legacy": Legacy, "nft": NFT, " nft ": NFT} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"nftables", "Legacy", "auto"} {
		_, err := Parse(bad)
		if err == nil || !strings.Contains(err.Error(), "IPTABLES_BACKEND=\""+bad+"\"") {
			t.Errorf("Parse(%q) error = %v, want one naming the value", bad, err)
		}
	}
}

func TestCommand(t *testing.T) {
	cases := []struct {
		b          Backend
		tool, want string
	}{
		{Default, "iptables", "iptables"},
		{Default, "iptables-save", "iptables-save"},
		{NFT, "iptables", "iptables-nft"},
		{NFT, "iptables-restore", "iptables-nft-restore"},
		{Legacy, "iptables-save", "iptables-legacy-save"},
		{Legacy, "ip6tables", "ip6tables-legacy"},
	}
	for _, c := range cases {
		if got := c.b.Command(c.tool); got != c.want {
			t.Errorf("%q.Command(%q) = %q, want %q", c.b, c.tool, got, c.want)
		}
	}
}

func TestBinaryFollowsEnv(t *testing.T) {
	t.Setenv(EnvVar, "legacy")
	if got, err := Binary("iptables"); err != nil || got != "iptables-legacy" {
		t.Fatalf("Binary = %q, %v; want iptables-legacy", got, err)
	}
	t.Setenv(EnvVar, "bogus")
	if _, err := Binary("iptables"); err == nil {
		t.Fatal("Binary with IPTABLES_BACKEND=bogus: no error")
	}
}
