// Package iptables chooses which iptables backend, legacy (x_tables) or nft
// (nf_tables), every weave program drives, so the router, the NetworkPolicy
// controller and the helpers never put rules where kube-proxy does not look.
//
// The choice travels in the environment variable IPTABLES_BACKEND
// ("legacy" or "nft"; unset means the host's default `iptables`). weave-kube
// resolves it once (the variable, else Detect, as Weave Net 2.8.1's launch
// did) and exports it to everything it starts; each program then runs the
// binaries Command names. Tools that run iptables import this package rather
// than exec "iptables" themselves.
package iptables

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// EnvVar names the environment variable holding the backend.
const EnvVar = "IPTABLES_BACKEND"

// Backend is an iptables backend.
type Backend string

// The backends. Default runs the unsuffixed binaries (whatever the host's
// alternatives point at).
const (
	Default Backend = ""
	Legacy  Backend = "legacy"
	NFT     Backend = "nft"
)

// Parse validates a backend name; "" is Default.
func Parse(s string) (Backend, error) {
	switch b := Backend(strings.TrimSpace(s)); b {
	case Default, Legacy, NFT:
		return b, nil
	}
	return Default, fmt.Errorf("%s=%q: want %q or %q (or unset for the host's default iptables)", EnvVar, s, Legacy, NFT)
}

// FromEnv is the backend the environment asks for.
func FromEnv() (Backend, error) {
	return Parse(os.Getenv(EnvVar))
}

// Command is the binary for tool ("iptables", "iptables-save",
// "iptables-restore", "ip6tables", ...) under b: "iptables-nft-save" for
// NFT, "iptables-legacy-save" for Legacy, tool itself for Default.
func (b Backend) Command(tool string) string {
	if b == Default {
		return tool
	}
	base, rest, _ := strings.Cut(tool, "-")
	if rest != "" {
		rest = "-" + rest
	}
	return base + "-" + string(b) + rest
}

// Binary is the binary for tool under the backend named by IPTABLES_BACKEND;
// a bad value is an error naming it.
func Binary(tool string) (string, error) {
	b, err := FromEnv()
	if err != nil {
		return "", err
	}
	return b.Command(tool), nil
}

// Counts are the numbers of rules each backend holds.
type Counts struct {
	Legacy, NFT int
}

// Detect picks the backend the host already uses, as Weave Net 2.8.1's
// launch did: count the rules (lines starting with "-") that
// iptables-legacy-save and iptables-nft-save print; more legacy rules than
// nft rules means legacy, anything else nft. A backend whose save binary is
// missing or fails counts 0; when both are missing the result is Default.
func Detect(ctx context.Context) (Backend, Counts, error) {
	var c Counts
	legacy, lerr := countRules(ctx, Legacy.Command("iptables-save"))
	nft, nerr := countRules(ctx, NFT.Command("iptables-save"))
	c.Legacy, c.NFT = legacy, nft
	switch {
	case lerr != nil && nerr != nil:
		return Default, c, fmt.Errorf("detect iptables backend: %w; %w", lerr, nerr)
	case legacy > nft:
		return Legacy, c, nil
	}
	return NFT, c, nil
}

// Resolve is the backend from IPTABLES_BACKEND when set, else Detect's.
// detected reports which of the two it was.
func Resolve(ctx context.Context) (b Backend, detected bool, c Counts, err error) {
	if b, err = FromEnv(); err != nil || b != Default {
		return b, false, c, err
	}
	b, c, err = Detect(ctx)
	return b, true, c, err
}

func countRules(ctx context.Context, bin string) (int, error) {
	out, err := exec.CommandContext(ctx, bin).Output()
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", bin, err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "-") {
			n++
		}
	}
	return n, nil
}
