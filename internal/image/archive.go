package image

import (
	"archive/tar"
	_ "crypto/sha256" // go-digest hashes with it
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Config is what a container of the image runs by default.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string // default PATH=/usr/sbin:/usr/bin:/sbin:/bin
	WorkingDir string
	Labels     map[string]string
}

// dockerManifest is one entry of a docker-archive's manifest.json (the
// format of `docker save`, read by `docker load`, `podman load` and
// containerd's importer).
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// WriteArchive writes an image of the one layer (an uncompressed tar, as
// Layer.Tar makes it) and cfg, named by each of refs (full references,
// "localhost/weave-kube:1.0"), to w: an OCI image layout (oci-layout,
// index.json, blobs/sha256/...) plus the docker-archive manifest.json
// pointing at the same blobs, the layout `docker save` writes since Docker
// 25. All three loaders take it; so does `ctr images import`.
func WriteArchive(w io.Writer, refs []string, cfg Config, layer []byte) error {
	if len(refs) == 0 {
		return fmt.Errorf("image: no name for the image")
	}
	env := cfg.Env
	if len(env) == 0 {
		env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	layerDigest := digest.FromBytes(layer)
	img := ocispec.Image{
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config: ocispec.ImageConfig{
			Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, Env: env,
			WorkingDir: cfg.WorkingDir, Labels: cfg.Labels,
		},
		RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDigest}},
		History: []ocispec.History{{CreatedBy: "weave internal/image"}},
	}
	cfgJSON, err := json.Marshal(img)
	if err != nil {
		return fmt.Errorf("image: config: %w", err)
	}
	cfgDigest := digest.FromBytes(cfgJSON)
	man := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: cfgDigest, Size: int64(len(cfgJSON))},
		Layers:    []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageLayer, Digest: layerDigest, Size: int64(len(layer))}},
	}
	manJSON, err := json.Marshal(man)
	if err != nil {
		return fmt.Errorf("image: manifest: %w", err)
	}
	manDigest := digest.FromBytes(manJSON)
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	for _, ref := range refs {
		tag := ref[strings.LastIndex(ref, ":")+1:]
		if !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
			return fmt.Errorf("image: name %q has no tag (name:tag)", ref)
		}
		idx.Manifests = append(idx.Manifests, ocispec.Descriptor{
			MediaType: ocispec.MediaTypeImageManifest, Digest: manDigest, Size: int64(len(manJSON)),
			Annotations: map[string]string{
				"io.containerd.image.name":         ref,
				ocispec.AnnotationRefName:          tag,
				"org.opencontainers.image.created": "1970-01-01T00:00:00Z",
			},
		})
	}
	idxJSON, err := json.Marshal(idx)
	if err != nil {
		return fmt.Errorf("image: index: %w", err)
	}
	blob := func(d digest.Digest) string { return "blobs/sha256/" + d.Encoded() }
	docker, err := json.Marshal([]dockerManifest{{Config: blob(cfgDigest), RepoTags: refs, Layers: []string{blob(layerDigest)}}})
	if err != nil {
		return fmt.Errorf("image: manifest.json: %w", err)
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})

	tw := tar.NewWriter(w)
	dirs := []string{"blobs/", "blobs/sha256/"}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return fmt.Errorf("image: %w", err)
		}
	}
	files := []struct {
		name string
		data []byte
	}{
		{blob(layerDigest), layer}, {blob(cfgDigest), cfgJSON}, {blob(manDigest), manJSON},
		{ocispec.ImageLayoutFile, layout}, {"index.json", idxJSON}, {"manifest.json", docker},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			return fmt.Errorf("image: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return fmt.Errorf("image: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

// WriteArchiveFile is WriteArchive into file p (made atomically: a
// reader never sees half an archive).
func WriteArchiveFile(p string, refs []string, cfg Config, layer []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".image-*.tar")
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := WriteArchive(tmp, refs, cfg, layer); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("image: write %s: %w", p, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}
