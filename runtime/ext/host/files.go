package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentoslab/agentlab/runtime/apps"
)

// Plugin file listing limits (spec §4.9).
const (
	MaxPluginFiles = 1024
	MaxPluginDepth = 6
)

// Files reads the plugin assets of installed packages: the analogue of
// createPackageContext(pkg).assets. No service is started to read them.
type Files interface {
	// List returns the regular files under the package's plugin
	// directory as slash paths relative to it (at most MaxPluginFiles, at
	// most MaxPluginDepth segments), and whether the directory exists.
	List(p apps.Package) (files []string, exists bool, err error)
	// Read returns at most limit bytes of a listed file.
	Read(p apps.Package, rel string, limit int64) ([]byte, error)
}

// DirFiles reads the unpacked bundles on disk (Package.PluginDir).
type DirFiles struct{}

var _ Files = DirFiles{}

var errStop = errors.New("stop")

// List implements Files. Symlinks and special files are not listed.
func (DirFiles) List(p apps.Package) ([]string, bool, error) {
	dir := p.PluginDir()
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("list plugin files: %w", err)
	}
	if !fi.IsDir() {
		return nil, false, nil
	}
	var out []string
	err = fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner is simply not listed
		}
		if p == "." {
			return nil
		}
		depth := strings.Count(p, "/") + 1
		if d.IsDir() {
			if depth >= MaxPluginDepth {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || depth > MaxPluginDepth {
			return nil
		}
		if len(out) == MaxPluginFiles {
			return errStop
		}
		out = append(out, p)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, true, fmt.Errorf("list plugin files: %w", err)
	}
	return out, true, nil
}

// Read implements Files.
func (DirFiles) Read(p apps.Package, rel string, limit int64) ([]byte, error) {
	if !fs.ValidPath(rel) || path.Clean(rel) != rel {
		return nil, fmt.Errorf("read plugin file: bad path")
	}
	full := filepath.Join(p.PluginDir(), filepath.FromSlash(rel))
	fi, err := os.Lstat(full)
	if err != nil {
		return nil, fmt.Errorf("read plugin file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read plugin file: not a regular file")
	}
	f, err := os.Open(full)
	if err != nil {
		return nil, fmt.Errorf("read plugin file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("read plugin file: %w", err)
	}
	return b, nil
}
