package netnstest

import "testing"

func TestSNMPCounter(t *testing.T) {
	const snmp = "Ip: Forwarding DefaultTTL ReasmOKs\nIp: 1 64 7\nUdp: InDatagrams RcvbufErrors\nUdp: 40 3\n"
	for _, tc := range []struct {
		proto, name string
		want        int
		ok          bool
	}{{"Ip", "ReasmOKs", 7, true}, {"Udp", "RcvbufErrors", 3, true}, {"Ip", "Nope", 0, false}, {"Tcp", "ReasmOKs", 0, false}} {
		got, err := snmpCounter(snmp, tc.proto, tc.name)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("snmpCounter(%s, %s) = %d, %v; want %d, ok %v", tc.proto, tc.name, got, err, tc.want, tc.ok)
		}
	}
}
