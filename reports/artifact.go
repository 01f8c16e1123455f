package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ArtifactOf describes the file at rel (slash-separated, relative to the
// run's output directory dir) for the results: its size and SHA-256, read by
// streaming the file.
func ArtifactOf(dir, rel string, kind ArtifactKind) (Artifact, error) {
	if !cleanRelative(rel) {
		return Artifact{}, fmt.Errorf("artifact %q: %w: not a clean relative slash-separated path", rel, ErrInvalid)
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact %s: %w", rel, err)
	}
	return Artifact{Path: rel, Kind: kind, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
