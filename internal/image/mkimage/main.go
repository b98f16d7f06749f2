// Command mkimage writes the weave-kube image (package image) as an
// archive that docker load, podman load and ctr images import accept, and
// optionally the DaemonSet manifest naming it. `make image` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/seedf75a49c6/weave/internal/image"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding "+strings.Join(image.WeaveBinaries, ", "))
	out := flag.String("o", ".build/image/weave-kube.tar", "the archive to write")
	name := flag.String("name", "", "the image's name:tag (comma-separated for several)")
	manIn := flag.String("manifest", "", "a manifest whose image: lines get -name's first name")
	manOut := flag.String("manifest-out", "", "where to write that manifest")
	flag.Parse()
	if err := run(*bin, *out, *name, *manIn, *manOut); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(bin, out, name, manIn, manOut string) error {
	if name == "" {
		return fmt.Errorf("-name is required (e.g. localhost/weave-kube:dev)")
	}
	refs := strings.Split(name, ",")
	l, err := image.WeaveLayer(bin)
	if err != nil {
		return err
	}
	layer, err := l.Tar()
	if err != nil {
		return err
	}
	cfg := image.Config{Entrypoint: []string{"/usr/bin/weave-kube"}}
	if err := image.WriteArchiveFile(out, refs, cfg, layer); err != nil {
		return err
	}
	fmt.Printf("%s: %s (%.1f MB)\n", out, refs[0], float64(len(layer))/1e6)
	if manIn == "" {
		return nil
	}
	m, err := os.ReadFile(manIn)
	if err != nil {
		return err
	}
	if m, err = image.SetManifestImage(m, refs[0]); err != nil {
		return fmt.Errorf("%s: %w", manIn, err)
	}
	if manOut == "" {
		return fmt.Errorf("-manifest needs -manifest-out")
	}
	if err := os.WriteFile(manOut, m, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: the manifest with image %s\n", manOut, refs[0])
	return nil
}
