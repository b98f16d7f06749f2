package netnstest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// SNMPCounter reads one counter of namespace ns's /proc/net/snmp, e.g.
// ("Ip", "ReasmOKs") or ("Udp", "RcvbufErrors"), failing the test if the
// file or the counter cannot be read.
func SNMPCounter(t testing.TB, ns, proto, name string) int {
	t.Helper()
	out, err := Output(ns, "cat", "/proc/net/snmp")
	if err != nil {
		t.Fatalf("read /proc/net/snmp in %s: %v", ns, err)
	}
	v, err := snmpCounter(out, proto, name)
	if err != nil {
		t.Fatalf("%s in %s: %v", name, ns, err)
	}
	return v
}

// snmpCounter finds proto's name in /proc/net/snmp text: a header line of
// names, then a line of values, both starting with "proto:".
func snmpCounter(snmp, proto, name string) (int, error) {
	var names []string
	for _, line := range strings.Split(snmp, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == name && i < len(f) {
				return strconv.Atoi(f[i])
			}
		}
		break
	}
	return 0, fmt.Errorf("no %s %s in /proc/net/snmp", proto, name)
}
