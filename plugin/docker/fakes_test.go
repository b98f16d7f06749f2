package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
)

// fakeAlloc is an in-memory allocator over 10.32.0.0/12 that files
// NoContainerID allocations under the address, as the real one does.
type fakeAlloc struct {
	mu    sync.Mutex
	owned map[string][]address.CIDR
	next  map[address.Address]bool // taken addresses
}

func newFakeAlloc() *fakeAlloc {
	return &fakeAlloc{owned: map[string][]address.CIDR{}, next: map[address.Address]bool{}}
}

var testUniverse = address.MustParseCIDR("10.32.0.0/12")

func (f *fakeAlloc) Universe() address.CIDR      { return testUniverse }
func (f *fakeAlloc) DefaultSubnet() address.CIDR { return testUniverse }

func (f *fakeAlloc) Allocate(_ context.Context, ident string, subnet address.CIDR) (address.CIDR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.owned[ident] {
		if subnet.Range().Contains(c.Addr) {
			return c, nil
		}
	}
	r := subnet.HostRange()
	for a := r.Start; a < r.End; a++ {
		if !f.next[a] {
			f.next[a] = true
			if ident == ipam.NoContainerID {
				ident = a.String()
			}
			c := address.CIDR{Addr: a, PrefixLen: subnet.PrefixLen}
			f.owned[ident] = append(f.owned[ident], c)
			return c, nil
		}
	}
	return address.CIDR{}, ipam.ErrNoSpace
}

func (f *fakeAlloc) Claim(_ context.Context, ident string, c address.CIDR, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next[c.Addr] {
		return fmt.Errorf("claim %s: %w", c, ipam.ErrAddressInUse)
	}
	f.next[c.Addr] = true
	f.owned[ident] = append(f.owned[ident], c)
	return nil
}

func (f *fakeAlloc) Free(ident string, a address.Address) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.owned[ident] {
		if c.Addr == a {
			f.owned[ident] = append(f.owned[ident][:i], f.owned[ident][i+1:]...)
			if len(f.owned[ident]) == 0 {
				delete(f.owned, ident)
			}
			delete(f.next, a)
			return nil
		}
	}
	return errors.New("not allocated")
}

func (f *fakeAlloc) Owned() (map[string][]address.CIDR, error) { return f.idents(), nil }

func (f *fakeAlloc) idents() map[string][]address.CIDR {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]address.CIDR{}
	for k, v := range f.owned {
		out[k] = append([]address.CIDR(nil), v...)
	}
	return out
}

// fakeLinks records endpoints and exposed addresses in memory.
type fakeLinks struct {
	mu        sync.Mutex
	endpoints map[string]net.HardwareAddr
	bridge    []netip.Prefix
	sandbox   map[string]int // SandboxKey -> other interfaces
	n         byte
}

func newFakeLinks() *fakeLinks {
	return &fakeLinks{endpoints: map[string]net.HardwareAddr{}, sandbox: map[string]int{}}
}

func (f *fakeLinks) CreateEndpoint(_, id string, mac net.HardwareAddr) (net.HardwareAddr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if mac == nil {
		f.n++
		mac = net.HardwareAddr{0x02, 0, 0, 0, 0, f.n}
	}
	f.endpoints[id] = mac
	return mac, nil
}

func (f *fakeLinks) DeleteEndpoint(id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.endpoints[id]
	delete(f.endpoints, id)
	return ok, nil
}

func (f *fakeLinks) EndpointExists(id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.endpoints[id]
	return ok, nil
}

func (f *fakeLinks) SandboxIfaces(path string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sandbox[path], nil
}

func (f *fakeLinks) BridgeAddrs(string) ([]netip.Prefix, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]netip.Prefix(nil), f.bridge...), nil
}

func (f *fakeLinks) Expose(_ string, p netip.Prefix) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bridge = append(f.bridge, p)
	return nil
}
