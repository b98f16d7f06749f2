package address

import (
	"errors"
	"testing"
)

func TestParseCIDR(t *testing.T) {
	c, err := ParseCIDR("10.32.0.1/12")
	if err != nil {
		t.Fatal(err)
	}
	if c.Start().String() != "10.32.0.0" || c.Size() != 1<<20 || c.IsSubnet() {
		t.Fatalf("got %v start %v size %d", c, c.Start(), c.Size())
	}
	if hr := c.HostRange(); hr.Start.String() != "10.32.0.1" || hr.End.String() != "10.47.255.255" {
		t.Fatalf("host range %v", hr)
	}
	for _, bad := range []string{"", "10.0.0.0", "10.0.0.0/33", "fe80::/64", "::ffff:10.0.0.0/104", "10.0.0/8", "x/8"} {
		if _, err := ParseCIDR(bad); err == nil {
			t.Errorf("ParseCIDR(%q) accepted", bad)
		}
	}
	if _, err := ParseCIDR("fe80::/64"); !errors.Is(err, ErrNotIPv4) {
		t.Errorf("IPv6 error %v does not wrap ErrNotIPv4", err)
	}
}

func TestRangeCIDRs(t *testing.T) {
	r := Range{Start: MustParseCIDR("10.0.0.1/32").Addr, End: MustParseCIDR("10.0.0.8/32").Addr}
	got := r.CIDRs()
	want := []string{"10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/30"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range got {
		if got[i].String() != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	if all := (Range{Start: 0, End: 0}).CIDRs(); len(all) != 0 {
		t.Fatalf("empty range gave %v", all)
	}
}

func TestRangeOps(t *testing.T) {
	a := NewRange(10, 10)
	b := NewRange(15, 10)
	if !a.Overlaps(b) || a.Intersect(b) != (Range{15, 20}) || a.Size() != 10 || !a.Contains(19) || a.Contains(20) {
		t.Fatal("range ops wrong")
	}
	if NewRange(0, 5).Overlaps(NewRange(5, 5)) {
		t.Fatal("adjacent ranges overlap")
	}
}
