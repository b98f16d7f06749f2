package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAttachPsDetach(t *testing.T) {
	h := newHarness(t)
	h.kernel.bridgeOK = true
	ns1, ns2 := h.netns("c1"), h.netns("c2")

	code, out, errOut := h.run("attach", "10.2.1.1/24", "ip:10.2.1.9/24", "--no-multicast-route", "c1")
	if code != 0 || out != "10.2.1.1 10.2.1.9\n" {
		t.Fatalf("attach c1: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = h.run("attach", "10.2.1.2/24", ns2); code != 0 || out != "10.2.1.2\n" {
		t.Fatalf("attach c2: %d %q %q", code, out, errOut)
	}
	want := []string{
		"attach bridge=weave netns=" + ns1 + " id=c1 if=ethwe addrs=10.2.1.1/24 10.2.1.9/24 nomcast=true",
		"attach bridge=weave netns=" + ns2 + " id=c2 if=ethwe addrs=10.2.1.2/24 nomcast=false",
	}
	if !slices.Equal(h.kernel.calls, want) {
		t.Fatalf("kernel calls\n%q\nwant\n%q", h.kernel.calls, want)
	}

	_, out, _ = h.run("ps")
	wantPS := "weave:expose 8a:3e:3e:3e:3e:3e 10.2.0.254/16\n" +
		"c1 02:00:00:00:00:01 10.2.1.1/24 10.2.1.9/24\n" +
		"c2 02:00:00:00:00:01 10.2.1.2/24\n"
	if out != wantPS {
		t.Fatalf("ps:\n%s\nwant:\n%s", out, wantPS)
	}
	if _, out, _ = h.run("ps", "c2"); out != "c2 02:00:00:00:00:01 10.2.1.2/24\n" {
		t.Errorf("ps c2: %q", out)
	}

	// A namespace that disappeared is not listed.
	if err := os.Remove(ns2); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = h.run("ps"); strings.Contains(out, "c2 ") {
		t.Errorf("ps lists a dead namespace: %q", out)
	}

	// Detaching one address keeps the interface and the record.
	if code, out, _ = h.run("detach", "10.2.1.9/24", "c1"); code != 0 || out != "10.2.1.9\n" {
		t.Fatalf("detach one: %d %q", code, out)
	}
	if _, out, _ = h.run("ps", "c1"); out != "c1 02:00:00:00:00:01 10.2.1.1/24\n" {
		t.Errorf("ps after partial detach: %q", out)
	}
	// Detaching everything removes the interface and the record.
	if code, out, _ = h.run("detach", "c1"); code != 0 || out != "10.2.1.1\n" {
		t.Fatalf("detach all: %d %q", code, out)
	}
	if last := h.kernel.calls[len(h.kernel.calls)-1]; last != "detach netns="+ns1+" if=ethwe addrs=" {
		t.Errorf("detach all sent %q, want nil addrs", last)
	}
	list, err := (&cmd{Config: h.cfg.withDefaults()}).attachments()
	if err != nil || len(list) != 1 || list[0].ID != "c2" {
		t.Errorf("registry after detach = %+v, %v", list, err)
	}
	if code, _, errOut = h.run("detach", "c1"); code != 1 || !strings.Contains(errOut, "detach c1: not attached") {
		t.Errorf("detach twice: %d %q", code, errOut)
	}
}

func TestAttachNeedsIPAMWithoutAddress(t *testing.T) {
	h := newHarness(t)
	h.netns("c1")
	for _, args := range [][]string{{"attach", "c1"}, {"attach", "net:default", "c1"}, {"attach", "net:10.2.0.0/16", "c1"}} {
		code, _, errOut := h.run(args...)
		if code != 1 || strings.TrimSpace(errOut) != errNoIPAM.Error() {
			t.Errorf("%q without router: %d %q", args, code, errOut)
		}
	}
	h.withRouter() // a router without IPAM routes answers 404
	if code, _, errOut := h.run("attach", "c1"); code != 1 || !strings.Contains(errOut, "no IP allocator") {
		t.Errorf("attach with IPAM-less router: %d %q", code, errOut)
	}
	if len(h.kernel.calls) != 0 {
		t.Errorf("kernel touched without addresses: %q", h.kernel.calls)
	}
}

func TestAttachUsesIPAMWhenAvailable(t *testing.T) {
	h := newHarness(t)
	h.netns("c1")
	r := h.withRouter()
	r.set("POST /ip/c1", 200, "10.32.0.1/12")
	r.set("POST /ip/c1/10.2.0.0/16", 200, "10.2.0.7/16")
	r.set("PUT /ip/c1/10.2.1.1/24", 204, "")
	code, out, errOut := h.run("attach", "net:default", "net:10.2.0.0/16", "10.2.1.1/24", "c1")
	if code != 0 || out != "10.32.0.1 10.2.0.7 10.2.1.1\n" {
		t.Fatalf("attach: %d %q %q", code, out, errOut)
	}
	want := []string{"POST /ip/c1?check-alive=true", "POST /ip/c1/10.2.0.0/16?check-alive=true",
		"PUT /ip/c1/10.2.1.1/24?noErrorOnUnknown=true&check-alive=true"}
	if !slices.Equal(r.got(), want) {
		t.Errorf("requests %q, want %q", r.got(), want)
	}
	r.set("PUT /ip/c1/10.2.1.5/24", 409, "address 10.2.1.5 is already owned by c9")
	code, _, errOut = h.run("attach", "10.2.1.5/24", "c1")
	if code != 1 || !strings.Contains(errOut, "already owned by c9") {
		t.Errorf("claim conflict: %d %q", code, errOut)
	}
	r.set("DELETE /ip/c1/10.2.0.7", 204, "")
	if code, _, errOut = h.run("detach", "net:10.2.0.0/16", "c1"); code != 0 {
		t.Fatalf("detach net: %d %q", code, errOut)
	}
	// Both addresses inside 10.2.0.0/16 go; 10.32.0.1 stays.
	if got := r.got(); !slices.Equal(got[len(got)-2:], []string{"DELETE /ip/c1/10.2.0.7", "DELETE /ip/c1/10.2.1.1"}) {
		t.Errorf("detach released %q", got[len(got)-2:])
	}
}

func TestAttachFailureReleasesAllocation(t *testing.T) {
	h := newHarness(t)
	h.netns("c1")
	r := h.withRouter()
	r.set("POST /ip/c1", 200, "10.32.0.1/12")
	r.set("DELETE /ip/c1/10.32.0.1", 204, "")
	h.kernel.failWith = os.ErrPermission
	if code, _, errOut := h.run("attach", "c1"); code != 1 || !strings.Contains(errOut, "attach c1: permission denied") {
		t.Fatalf("attach: %d %q", code, errOut)
	}
	want := []string{"POST /ip/c1?check-alive=true", "DELETE /ip/c1/10.32.0.1"}
	if !slices.Equal(r.got(), want) {
		t.Errorf("requests %q, want %q", r.got(), want)
	}
}

func TestAttachKernelErrorNamesTarget(t *testing.T) {
	h := newHarness(t)
	h.netns("c1")
	h.kernel.failWith = os.ErrPermission
	code, _, errOut := h.run("attach", "10.2.1.1/24", "c1")
	if code != 1 || !strings.Contains(errOut, "attach c1: permission denied") {
		t.Fatalf("%d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(h.cfg.RunDir, "attached")); err == nil {
		t.Errorf("failed attach was recorded")
	}
}

func TestReset(t *testing.T) {
	h := newHarness(t)
	r := h.withRouter()
	r.set("DELETE /peer", 204, "")
	h.netns("c1")
	if code, _, errOut := h.run("attach", "10.2.1.1/24", "c1"); code != 0 {
		t.Fatal(errOut)
	}
	keep := filepath.Join(h.cfg.DataDir, "README")
	for _, f := range []string{"weavedata.db", "weave-netdata.db", "peername", "targets", "README"} {
		if err := os.WriteFile(filepath.Join(h.cfg.DataDir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := h.run("reset")
	if code != 0 || !strings.Contains(errOut, "weave router is not running") {
		t.Fatalf("reset: %d %q", code, errOut)
	}
	if got := r.got(); got[len(got)-1] != "DELETE /peer" {
		t.Errorf("reset did not DELETE /peer: %q", got)
	}
	calls := h.kernel.calls[len(h.kernel.calls)-2:]
	if !slices.Equal(calls, []string{"destroy-bridge weave", "remove-iptables weave"}) {
		t.Errorf("kernel calls %q", calls)
	}
	left, _ := filepath.Glob(filepath.Join(h.cfg.DataDir, "*"))
	if !slices.Equal(left, []string{keep}) {
		t.Errorf("data dir after reset: %q", left)
	}
	if _, err := os.Stat(filepath.Join(h.cfg.RunDir, "attached")); !os.IsNotExist(err) {
		t.Errorf("attachment registry survived reset: %v", err)
	}
}

func TestResetForce(t *testing.T) {
	h := newHarness(t)
	r := h.withRouter()
	r.set("DELETE /peer", 500, "ring not ready")
	if code, _, errOut := h.run("reset"); code != 1 || !strings.Contains(errOut, "ring not ready") {
		t.Fatalf("reset without --force: %d %q", code, errOut)
	}
	if len(h.kernel.calls) != 0 {
		t.Fatalf("reset went on after a failure: %q", h.kernel.calls)
	}
	h.kernel.failWith = os.ErrPermission
	code, _, errOut := h.run("reset", "--force")
	if code != 0 || !strings.Contains(errOut, "reset (ignored with --force)") {
		t.Fatalf("reset --force: %d %q", code, errOut)
	}
	if len(h.kernel.calls) != 2 {
		t.Errorf("--force skipped steps: %q", h.kernel.calls)
	}
}
