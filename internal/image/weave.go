package image

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// WeaveBinaries are the programs of the weave-kube image, from `make
// build` (./prog/...): what the DaemonSet's containers run and what
// `weave setup-cni` installs on the host.
var WeaveBinaries = []string{"weave-kube", "weaver", "weaveutil", "weave-net", "weave-ipam", "weave-npc"}

// iptablesTools are the names under which the DaemonSet's programs run
// iptables (internal/iptables: Backend.Command) and the binary each is.
var iptablesTools = func() map[string]string {
	m := map[string]string{}
	for _, fam := range []string{"iptables", "ip6tables"} {
		for _, suf := range []string{"", "-save", "-restore"} {
			m[fam+"-nft"+suf] = "xtables-nft-multi"
			m[fam+"-legacy"+suf] = "xtables-legacy-multi"
			// Plain names follow Debian's default alternative: nft.
			m[fam+suf] = fam + "-nft" + suf
		}
	}
	return m
}()

// WeaveLayer is the file tree of the weave-kube image: the binaries of
// binDir (WeaveBinaries) in /usr/bin, and, copied from this host's Debian
// packages with the shared libraries they need, what they exec: iptables
// (both backends, package iptables) and modprobe (package kmod), plus the
// files those read (/etc/protocols, /etc/services, /etc/ethertypes). No
// shell, no package manager.
func WeaveLayer(binDir string) (*Layer, error) {
	l := NewLayer()
	l.MergedUsr()
	for _, b := range WeaveBinaries {
		if err := l.CopyELF("/usr/bin/"+b, filepath.Join(binDir, b)); err != nil {
			return nil, err
		}
	}
	for _, multi := range []string{"xtables-nft-multi", "xtables-legacy-multi"} {
		src, err := hostProgram(multi, "iptables")
		if err != nil {
			return nil, err
		}
		if err := l.CopyELF("/usr/sbin/"+multi, src); err != nil {
			return nil, err
		}
	}
	for name, target := range iptablesTools {
		l.Symlink("/usr/sbin/"+name, target)
	}
	// iptables loads its matches and targets (libxt_*.so) at run time.
	ext, err := xtablesDir()
	if err != nil {
		return nil, err
	}
	mods, err := filepath.Glob(filepath.Join(ext, "*.so"))
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	for _, m := range mods {
		if err := l.addHostPath(m); err != nil {
			return nil, err
		}
		if err := l.addDeps(m, map[string]bool{}); err != nil {
			return nil, err
		}
	}
	kmod, err := hostProgram("kmod", "kmod")
	if err != nil {
		return nil, err
	}
	if err := l.CopyELF("/usr/bin/kmod", kmod); err != nil {
		return nil, err
	}
	for _, n := range []string{"modprobe", "lsmod", "insmod", "rmmod", "modinfo"} {
		l.Symlink("/usr/sbin/"+n, "../bin/kmod")
	}
	for _, f := range []string{"/etc/protocols", "/etc/services", "/etc/ethertypes"} {
		if _, err := os.Stat(f); err == nil {
			if err := l.CopyFile(f, f); err != nil {
				return nil, err
			}
		}
	}
	l.File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\n"))
	l.File("/etc/group", 0o644, []byte("root:x:0:\n"))
	l.File("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\nprotocols: files\nservices: files\n"))
	for _, d := range []string{"/tmp", "/run", "/var/lib/weave", "/root", "/proc", "/sys", "/dev", "/host"} {
		l.Dir(d)
	}
	return l, nil
}

// hostProgram finds program name of Debian package pkg on this host.
func hostProgram(name, pkg string) (string, error) {
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := path.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("image: no %s on this host: install Debian package %s (make deps)", name, pkg)
}

// xtablesDir is where iptables' extensions are (libxtables' XTABLES_LIBDIR).
func xtablesDir() (string, error) {
	for _, d := range libDirs {
		p := filepath.Join(d, "xtables")
		if m, _ := filepath.Glob(filepath.Join(p, "libxt_*.so")); len(m) > 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("image: no iptables extensions (libxt_*.so) in %s: install Debian package iptables", strings.Join(libDirs, " "))
}
