package repotest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pkg is the subset of `go list -json` these checks read.
type pkg struct {
	ImportPath string
	Doc        string
	Name       string
	Deps       []string
	Imports    []string
}

func listPackages(t *testing.T, goos string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "github.com/seedf75a49c6/weave/...")
	cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list (GOOS=%s): %v", goos, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages; the pattern is wrong", len(pkgs))
	}
	return pkgs
}

// TestEveryPackageHasDoc enforces conventions §8.2: a `// Package x ...`
// comment on every package, commands included.
func TestEveryPackageHasDoc(t *testing.T) {
	for _, p := range listPackages(t, "linux") {
		want := "Package " + p.Name + " "
		if p.Name == "main" {
			want = "" // commands: any doc comment
		}
		if p.Doc == "" || !strings.HasPrefix(p.Doc, want) {
			t.Errorf("%s: package doc %q does not start with %q", p.ImportPath, p.Doc, want)
		}
	}
}

// TestPortableCoreDeps enforces conventions §8.20/§8.23: the core packages
// carry no kernel plumbing and no daemon code, on Linux and elsewhere.
func TestPortableCoreDeps(t *testing.T) {
	core := []string{"/router", "/sleeve", "/ipam", "/mesh"}
	banned := []string{
		"github.com/vishvananda/netlink",
		"github.com/vishvananda/netns",
		"github.com/seedf75a49c6/weave/internal/netdev",
		"github.com/seedf75a49c6/weave/internal/capture",
		"github.com/seedf75a49c6/weave/prog",
		"github.com/seedf75a49c6/weave/fastdp",
	}
	for _, goos := range []string{"linux", "darwin"} {
		for _, p := range listPackages(t, goos) {
			isCore := false
			for _, c := range core {
				rest := strings.TrimPrefix(p.ImportPath, "github.com/seedf75a49c6/weave")
				if rest == c || strings.HasPrefix(rest, c+"/") {
					isCore = true
				}
			}
			if !isCore {
				continue
			}
			for _, d := range p.Deps {
				for _, b := range banned {
					if d == b || strings.HasPrefix(d, b+"/") {
						t.Errorf("GOOS=%s: %s depends on %s", goos, p.ImportPath, d)
					}
				}
			}
		}
	}
}

const module = "github.com/seedf75a49c6/weave"

// layer names the floor a package of this module sits on: "internal"
// (kernel adapters, API client, CLI, leaf helpers), "prog" (binaries and
// their composition roots), "test" (harnesses and end-to-end tests), or
// "component" (router, ipam, mesh, sleeve, fastdp, plugins, ...).
func layer(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return "external"
	}
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "internal", "prog", "test":
		return first
	}
	return "component"
}

// TestImportDirection enforces the layering: nothing in internal/ imports
// a component (internal/ is what components use, never above them), and
// no component imports a binary's package under prog/.
func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t, "linux") {
		from := layer(p.ImportPath)
		for _, imp := range p.Imports {
			to := layer(imp)
			if (from == "internal" && to == "component") || (from == "component" && to == "prog") {
				t.Errorf("%s (%s) imports %s (%s): imports run from prog to components to internal, never back",
					p.ImportPath, from, imp, to)
			}
		}
	}
}

// dumpCall matches a netlink dump (package function or Handle method)
// that the kernel may interrupt: those go through internal/nlsafe.
var dumpCall = regexp.MustCompile(`\b(netlink|[a-z]\w*)\.(LinkList|AddrList|RouteList|RouteListFiltered|NeighList|RuleList|QdiscList|ClassList|FilterList|BridgeVlanList|LinkSubscribeWithOptions)\(`)

// TestNetlinkDumpsRetry enforces one way to dump netlink tables: every
// dump that may return netlink.ErrDumpInterrupted retries through
// internal/nlsafe instead of returning partial results.
func TestNetlinkDumpsRetry(t *testing.T) {
	rootOut, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	root := strings.TrimSpace(string(rootOut))
	out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "--", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 50 {
		t.Fatalf("git ls-files found only %d Go files", len(files))
	}
	for _, f := range files {
		if strings.HasPrefix(f, "internal/nlsafe/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := dumpCall.FindStringSubmatch(line); m != nil && m[1] != "nlsafe" {
				t.Errorf("%s:%d: %s.%s dumps netlink directly; use internal/nlsafe, which retries ErrDumpInterrupted", f, i+1, m[1], m[2])
			}
		}
	}
}
