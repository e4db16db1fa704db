package kuberig

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
)

// Image is a container image made of local files, for a node that cannot
// pull: one layer with Files (path in the image → host file, all
// executable) and Links (path → target of a symbolic link).
type Image struct {
	Name       string // e.g. localhost/fitgo/probe:v1
	Files      map[string]string
	Links      map[string]string
	Entrypoint []string
}

// WriteArchive writes the image as an OCI image layout in a tar archive,
// which "ctr images import" loads under the name in the index's
// io.containerd.image.name annotation.
func (img Image) WriteArchive(file string) error {
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	dirs := map[string]bool{}
	var addDirs func(string) error
	addDirs = func(dir string) error {
		if dir == "." || dir == "/" || dirs[dir] {
			return nil
		}
		if err := addDirs(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return lw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755})
	}
	for _, name := range slices.Sorted(maps.Keys(img.Files)) {
		b, err := os.ReadFile(img.Files[name])
		if err != nil {
			return err
		}
		if err := addDirs(path.Dir(name)); err != nil {
			return err
		}
		if err := lw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(b))}); err != nil {
			return err
		}
		if _, err := lw.Write(b); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(img.Links)) {
		if err := addDirs(path.Dir(name)); err != nil {
			return err
		}
		if err := lw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: img.Links[name], Mode: 0o777}); err != nil {
			return err
		}
	}
	// /tmp and /dev/termination-log's directory exist in any image.
	if err := addDirs("tmp"); err != nil {
		return err
	}
	if err := lw.Close(); err != nil {
		return err
	}

	blobs := map[string][]byte{}
	desc := func(mediaType string, b []byte) map[string]any {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return map[string]any{"mediaType": mediaType, "digest": d, "size": len(b)}
	}
	layerDesc := desc("application/vnd.oci.image.layer.v1.tar", layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": img.Entrypoint, "Env": []string{"PATH=/bin"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []any{layerDesc["digest"]}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc("application/vnd.oci.image.config.v1+json", config),
		"layers": []any{layerDesc},
	})
	if err != nil {
		return err
	}
	md := desc("application/vnd.oci.image.manifest.v1+json", manifest)
	md["platform"] = map[string]string{"architecture": "amd64", "os": "linux"}
	md["annotations"] = map[string]string{"io.containerd.image.name": img.Name}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []any{md},
	})
	if err != nil {
		return err
	}

	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b))}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	for _, d := range slices.Sorted(maps.Keys(blobs)) {
		if err := put("blobs/sha256/"+d[len("sha256:"):], blobs[d]); err != nil {
			return fmt.Errorf("%s: %w", img.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
