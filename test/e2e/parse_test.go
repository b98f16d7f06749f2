package e2e

import (
	"strings"
	"testing"
)

// connLine is one line of `weave status connections`.
type connLine struct {
	Dir, Addr, State, Info string
}

// parseConnections parses `weave status connections` output, e.g.
// "-> 192.168.100.2:6783     established encrypted   sleeve aa:..:02(h2) mtu=1414".
func parseConnections(out string) []connLine {
	var lines []connLine
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || (f[0] != "->" && f[0] != "<-") {
			continue
		}
		lines = append(lines, connLine{Dir: f[0], Addr: f[1], State: f[2], Info: strings.Join(f[3:], " ")})
	}
	return lines
}

// TestParseConnections runs without root: the status parser the e2e
// assertions rely on, over lines in Weave 2.8.1's format.
func TestParseConnections(t *testing.T) {
	out := "-> 192.168.100.2:6783    established encrypted   sleeve aa:00:00:00:00:02(h2) mtu=1414\n" +
		"-> 192.168.100.3:6783    connecting   \n" +
		"<- 192.168.100.1:41234   established sleeve aa:00:00:00:00:01(h1) mtu=1438\n" +
		"-> 192.168.100.1:6783    failed      Unable to decrypt TCP msg, retry: 2026-11-29 23:20:48\n" +
		"garbage line\n"
	got := parseConnections(out)
	want := []connLine{
		{"->", "192.168.100.2:6783", "established", "encrypted sleeve aa:00:00:00:00:02(h2) mtu=1414"},
		{"->", "192.168.100.3:6783", "connecting", ""},
		{"<-", "192.168.100.1:41234", "established", "sleeve aa:00:00:00:00:01(h1) mtu=1438"},
		{"->", "192.168.100.1:6783", "failed", "Unable to decrypt TCP msg, retry: 2026-11-29 23:20:48"},
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %d lines, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
