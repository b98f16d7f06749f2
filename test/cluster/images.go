//go:build linux

package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/seedf75a49c6/weave/internal/image"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// goBuild builds packages static (CGO_ENABLED=0) into outDir, with
// weave's mesh patch, as `make image` does.
func goBuild(outDir string, pkgs ...string) error {
	root, err := netnstest.ModuleRoot()
	if err != nil {
		return err
	}
	if err := netnstest.UsePatchedMesh(root); err != nil {
		return err
	}
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", outDir + "/"}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %w\n%s", pkgs, err, out)
	}
	return nil
}

// buildImages writes the pause and busybox images every node imports.
func (c *Cluster) buildImages() error {
	dir := filepath.Join(c.Dir, "images")
	if err := goBuild(filepath.Join(dir, "bin"), "./test/cluster/pause", "./test/cluster/echo"); err != nil {
		return err
	}
	pause := image.NewLayer()
	if err := pause.CopyELF("/pause", filepath.Join(dir, "bin", "pause")); err != nil {
		return err
	}
	box := image.NewLayer()
	if err := box.CopyELF("/bin/busybox", "/bin/busybox"); err != nil {
		return err
	}
	if err := box.CopyELF("/bin/echo-server", filepath.Join(dir, "bin", "echo")); err != nil {
		return err
	}
	for _, a := range []string{"sh", "ping", "ip", "sleep", "cat", "nc", "echo", "hostname", "ls", "grep", "seq", "date", "wc"} {
		box.Symlink("/bin/"+a, "busybox")
	}
	box.File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	box.File("/etc/group", 0o644, []byte("root:x:0:\n"))
	for _, d := range []string{"/tmp", "/proc", "/sys", "/dev", "/root"} {
		box.Dir(d)
	}
	for _, img := range []struct {
		ref   string
		layer *image.Layer
		cfg   image.Config
	}{
		{PauseImage, pause, image.Config{Entrypoint: []string{"/pause"}}},
		{BoxImage, box, image.Config{Cmd: []string{"/bin/sh"}}},
	} {
		tar, err := img.layer.Tar()
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.Base(img.ref)+".tar")
		if err := image.WriteArchiveFile(p, []string{img.ref}, img.cfg, tar); err != nil {
			return err
		}
		c.images = append(c.images, p)
	}
	return nil
}

// BuildWeaveImage builds the weave-kube image of ./prog/... named by refs
// into an archive under dir, and returns its path. It is `make image`'s
// image, but with the binaries built as the e2e tests build them (cgo,
// sharing their build cache: the image then carries libc, which iptables
// needs anyway).
func BuildWeaveImage(dir string, refs ...string) (string, error) {
	bin := filepath.Join(dir, "weave-bin")
	root, err := netnstest.ModuleRoot()
	if err != nil {
		return "", err
	}
	if err := netnstest.UsePatchedMesh(root); err != nil {
		return "", err
	}
	if err := netnstest.GoBuild(root, bin, "./prog/..."); err != nil {
		return "", err
	}
	l, err := image.WeaveLayer(bin)
	if err != nil {
		return "", err
	}
	tar, err := l.Tar()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "weave-kube.tar")
	if err := image.WriteArchiveFile(p, refs, image.Config{Entrypoint: []string{"/usr/bin/weave-kube"}}, tar); err != nil {
		return "", err
	}
	return p, nil
}
