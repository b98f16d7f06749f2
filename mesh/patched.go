package mesh

import (
	"runtime/debug"
	"strings"
)

// LibraryModule is the module path of the mesh library weave builds on.
const LibraryModule = "github.com/weaveworks/mesh"

// PatchedLibrary reports whether this binary was built with weave's patch
// of the mesh library (mesh/patches, applied by make through a workspace
// that replaces the pinned module by a patched copy in .build/mesh-<hash>),
// and describes what it was built with. A binary built by plain `go build`
// has the pristine library, which one 34-byte message can take to
// out-of-memory (docs/mesh-patch.md).
func PatchedLibrary() (bool, string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false, "no build information in this binary"
	}
	for _, dep := range info.Deps {
		if dep.Path != LibraryModule {
			continue
		}
		if r := dep.Replace; r != nil && strings.HasPrefix(lastElem(r.Path), "mesh-") {
			return true, dep.Version + " patched (" + r.Path + ")"
		}
		return false, dep.Version + " without weave's patch; build with make (docs/mesh-patch.md)"
	}
	return false, LibraryModule + " not linked"
}

func lastElem(p string) string { return p[strings.LastIndexAny(p, `/\`)+1:] }
