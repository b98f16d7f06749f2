// Package image builds container images without a registry or a base
// image: a single-layer file tree assembled from local files (our static
// binaries, and the few Debian-packaged programs they exec, with their
// shared libraries), written as one archive that `docker load`, `podman
// load` and `ctr images import` all accept (a docker-archive manifest.json
// next to an OCI image layout). `make image` and the real-cluster tests
// (test/cluster) use it.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Layer is the file tree of an image's one layer, keyed by absolute path
// inside the image.
type Layer struct {
	entries map[string]entry
}

type entry struct {
	mode fs.FileMode // permission bits; fs.ModeDir / fs.ModeSymlink for those
	data []byte
	link string
}

// NewLayer is an empty tree.
func NewLayer() *Layer { return &Layer{entries: map[string]entry{}} }

func clean(p string) string { return path.Clean("/" + p) }

// Dir adds directory p (and its parents).
func (l *Layer) Dir(p string) {
	p = clean(p)
	for d := p; d != "/"; d = path.Dir(d) {
		if _, ok := l.entries[d]; !ok {
			l.entries[d] = entry{mode: fs.ModeDir | 0o755}
		}
	}
}

// File adds a regular file p with mode perm and contents data.
func (l *Layer) File(p string, perm fs.FileMode, data []byte) {
	p = clean(p)
	l.Dir(path.Dir(p))
	l.entries[p] = entry{mode: perm & fs.ModePerm, data: data}
}

// Symlink adds p pointing at target.
func (l *Layer) Symlink(p, target string) {
	p = clean(p)
	l.Dir(path.Dir(p))
	l.entries[p] = entry{mode: fs.ModeSymlink | 0o777, link: target}
}

// MergedUsr adds /bin, /sbin, /lib and /lib64 as the symlinks into /usr
// they are on the host (Debian since 12), for those that are.
func (l *Layer) MergedUsr() {
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		if t, err := os.Readlink(d); err == nil {
			l.Symlink(d, t)
		}
	}
}

// Has reports whether p is in the tree.
func (l *Layer) Has(p string) bool { _, ok := l.entries[clean(p)]; return ok }

// CopyFile adds host file src (symlinks followed) as dst, keeping its
// permission bits.
func (l *Layer) CopyFile(dst, src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("image: read %s: %w", src, err)
	}
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	l.File(dst, st.Mode().Perm(), data)
	return nil
}

// libDirs are where the dynamic loader finds libraries on Debian amd64
// (and the other multiarch triplets' equivalents).
var libDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// CopyELF adds host program or library src as dst, plus, at the same
// paths as on the host, its program interpreter and every shared library
// it needs, transitively (from the ELF headers: nothing is executed). A
// static binary adds only itself.
func (l *Layer) CopyELF(dst, src string) error {
	if err := l.CopyFile(dst, src); err != nil {
		return err
	}
	return l.addDeps(src, map[string]bool{})
}

func (l *Layer) addDeps(src string, seen map[string]bool) error {
	f, err := elf.Open(src)
	if err != nil {
		return fmt.Errorf("image: %s is not an ELF file: %w", src, err)
	}
	defer f.Close()
	var need []string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("image: read interpreter of %s: %w", src, err)
			}
			need = append(need, strings.TrimRight(string(b), "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("image: libraries of %s: %w", src, err)
	}
	for _, lib := range libs {
		p, err := findLib(lib)
		if err != nil {
			return fmt.Errorf("image: %s needs %s: %w", src, lib, err)
		}
		need = append(need, p)
	}
	for _, p := range need {
		if seen[p] {
			continue
		}
		seen[p] = true
		if err := l.addHostPath(p); err != nil {
			return err
		}
		if err := l.addDeps(p, seen); err != nil {
			return err
		}
	}
	return nil
}

// addHostPath adds host path p as the same path in the image: a symlink
// stays a symlink (and its target is added), a file is copied.
func (l *Layer) addHostPath(p string) error {
	for range 16 {
		// Under merged /usr, /lib/x/libc.so.6 is /usr/lib/x/libc.so.6:
		// store it there, so no directory of the tree is a symlink.
		if d, err := filepath.EvalSymlinks(path.Dir(p)); err == nil {
			p = path.Join(d, path.Base(p))
		}
		if l.Has(p) {
			return nil
		}
		st, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("image: %w", err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return l.CopyFile(p, p)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("image: %w", err)
		}
		l.Symlink(p, target)
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		p = target
	}
	return fmt.Errorf("image: too many symlinks at %s", p)
}

func findLib(name string) (string, error) {
	if path.IsAbs(name) {
		return name, nil
	}
	for _, d := range libDirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %s", strings.Join(libDirs, " "))
}

// Tar is the layer as an uncompressed tar, byte for byte the same for the
// same tree: sorted paths, parents first, zero times, root-owned.
func (l *Layer) Tar() ([]byte, error) {
	paths := make([]string, 0, len(l.entries))
	for p := range l.entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := l.entries[p]
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: int64(e.mode.Perm()), Format: tar.FormatPAX}
		switch {
		case e.mode&fs.ModeDir != 0:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case e.mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image: tar %s: %w", p, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("image: tar %s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: tar: %w", err)
	}
	return buf.Bytes(), nil
}
