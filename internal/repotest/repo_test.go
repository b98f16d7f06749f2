package repotest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// pkg is the subset of `go list -json` these checks read.
type pkg struct {
	ImportPath string
	Doc        string
	Name       string
	Deps       []string
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
		"github.com/seedf75a49c6/weave/internal/weaver",
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
