package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
)

func TestSetManifestImage(t *testing.T) {
	in := "spec:\n  initContainers:\n    - name: a\n      image: weave-kube:latest\n  containers:\n    - image: x/y:1\n      name: b\n# image: in a comment stays\n"
	got, err := SetManifestImage([]byte(in), "localhost/weave-kube:2")
	if err != nil {
		t.Fatal(err)
	}
	want := "spec:\n  initContainers:\n    - name: a\n      image: localhost/weave-kube:2\n  containers:\n    - image: localhost/weave-kube:2\n      name: b\n# image: in a comment stays\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := SetManifestImage([]byte("kind: Pod\n"), "x:1"); err == nil {
		t.Error("a manifest without image: accepted")
	}
}

// TestArchive: the layer is deterministic and the archive holds what the
// three loaders read: manifest.json (docker-archive), index.json and
// oci-layout (OCI), every blob they name, the config's diff_id the layer's
// digest.
func TestArchive(t *testing.T) {
	mk := func() []byte {
		l := NewLayer()
		l.File("/usr/bin/prog", 0o755, []byte("#!/bin/true\n"))
		l.Symlink("/bin", "usr/bin")
		l.Dir("/tmp")
		b, err := l.Tar()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	layer := mk()
	if !bytes.Equal(layer, mk()) {
		t.Fatal("the same tree gave two different layers")
	}
	var names []string
	for name := range untar(t, layer) {
		names = append(names, name)
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "bin tmp/ usr/ usr/bin/ usr/bin/prog" {
		t.Errorf("layer entries %q", got)
	}
	var buf bytes.Buffer
	if err := WriteArchive(&buf, []string{"localhost/t:1"}, Config{Entrypoint: []string{"/usr/bin/prog"}}, layer); err != nil {
		t.Fatal(err)
	}
	files := untar(t, buf.Bytes())
	var man []dockerManifest
	if err := json.Unmarshal(files["manifest.json"], &man); err != nil || len(man) != 1 {
		t.Fatalf("manifest.json: %v %s", err, files["manifest.json"])
	}
	if man[0].RepoTags[0] != "localhost/t:1" || !bytes.Equal(files[man[0].Layers[0]], layer) {
		t.Errorf("manifest.json %+v does not name the image and its layer", man[0])
	}
	var cfg struct {
		Config struct{ Entrypoint []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[man[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Entrypoint[0] != "/usr/bin/prog" || len(cfg.RootFS.DiffIDs) != 1 ||
		cfg.RootFS.DiffIDs[0] != "sha256:"+strings.TrimPrefix(man[0].Layers[0], "blobs/sha256/") {
		t.Errorf("config %s", files[man[0].Config])
	}
	if !strings.Contains(string(files["index.json"]), `"io.containerd.image.name":"localhost/t:1"`) || files["oci-layout"] == nil {
		t.Errorf("no OCI layout: index.json %s", files["index.json"])
	}
	if err := WriteArchive(io.Discard, []string{"notag"}, Config{}, layer); err == nil {
		t.Error("a name without a tag accepted")
	}
}

// untar is the files of a tar by name.
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
}

// TestCopyELF: a dynamic program comes with its loader and libraries.
func TestCopyELF(t *testing.T) {
	if _, err := os.Stat("/usr/bin/ls"); err != nil {
		t.Skip("no /usr/bin/ls")
	}
	l := NewLayer()
	l.MergedUsr()
	if err := l.CopyELF("/usr/bin/ls", "/usr/bin/ls"); err != nil {
		t.Fatal(err)
	}
	var libc bool
	for p := range l.entries {
		if strings.Contains(p, "/libc.so") {
			libc = true
		}
		if strings.HasPrefix(p, "/lib/") || strings.HasPrefix(p, "/lib64/") {
			if _, err := os.Readlink("/lib"); err == nil {
				t.Errorf("%s stored under the /lib symlink", p)
			}
		}
	}
	if !libc {
		t.Errorf("ls added without libc: %v", l.entries)
	}
}
