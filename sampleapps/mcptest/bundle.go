package mcptest

import (
	"context"
	"crypto/ed25519"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/agentoslab/agentlab/runtime/apps"
)

//go:embed assets
var assets embed.FS

// Assets is the app's plugin directory (agent-plugin/…).
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	return sub
}

// BundleOptions vary the bundle for upgrade, rename and fault tests. The
// zero value is version 1 as shipped.
type BundleOptions struct {
	// VersionCode is app.json's versionCode; 0 means 1.
	VersionCode int64
	// PluginName replaces plugin.json's name (a rename).
	PluginName string
	// Files replace or add files under assets/agent-plugin/ (path →
	// content; nil content removes the file).
	Files map[string][]byte
}

//go:embed app.json
var appJSON []byte

// AppJSON is the bundle's app.json: the app.json next to this package
// (which the lab's build reads too) with versionCode set (0 means 1) and
// versionName 1.0.<versionCode>.
func AppJSON(versionCode int64) []byte {
	if versionCode <= 0 {
		versionCode = 1
	}
	a, err := apps.ParseApp(appJSON)
	if err != nil {
		panic("mcptest: app.json: " + err.Error())
	}
	a.VersionCode = versionCode
	a.VersionName = fmt.Sprintf("1.0.%d", versionCode)
	b, _ := json.Marshal(a)
	return b
}

// WriteBundle packs the app as a signed .agentapp bundle to w: app.json,
// the binary at binPath (built for this machine's ABI) and the plugin
// assets.
func WriteBundle(ctx context.Context, w io.Writer, key ed25519.PrivateKey, binPath string, o BundleOptions) (*apps.Manifest, error) {
	dir, err := os.MkdirTemp("", "mcptest-bundle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	put := func(name string, data []byte, mode os.FileMode) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, mode)
	}
	if err := put(apps.AppJSONName, AppJSON(o.VersionCode), 0o644); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("mcptest bundle: %w", err)
	}
	if err := put(apps.BinaryPath(apps.HostABI(), Binary), bin, 0o755); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	err = fs.WalkDir(Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets(), p)
		files[p] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	if o.PluginName != "" {
		var m map[string]any
		if err := json.Unmarshal(files["agent-plugin/plugin.json"], &m); err != nil {
			return nil, err
		}
		m["name"] = o.PluginName
		files["agent-plugin/plugin.json"], _ = json.MarshalIndent(m, "", "  ")
	}
	for p, b := range o.Files {
		full := path.Join("agent-plugin", p)
		if b == nil {
			delete(files, full)
		} else {
			files[full] = b
		}
	}
	for p, b := range files {
		if err := put("assets/"+p, b, 0o644); err != nil {
			return nil, err
		}
	}
	return apps.Pack(ctx, os.DirFS(dir), key, w)
}
