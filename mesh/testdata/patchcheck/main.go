// Command patchcheck prints what mesh.PatchedLibrary says about its own
// build; TestPatchedLibraryInBuiltBinary builds and runs it (test binaries
// carry no dependency build information).
package main

import (
	"fmt"
	"os"

	"github.com/seedf75a49c6/weave/mesh"
)

func main() {
	ok, detail := mesh.PatchedLibrary()
	fmt.Println(detail)
	if !ok {
		os.Exit(1)
	}
}
