// Package appbundle packs the sample apps as signed app bundles for
// tests, the way the lab's build does for devices: each app's binary
// (go build of sampleapps/<app>/cmd/<app>), its app.json and its plugin
// assets (sampleapps/<app>/assets/agent-plugin/…), signed with a key of
// the Set. A Set builds every binary in one go build, once, and packs each
// bundle once; a test binary keeps one Set for all its tests.
package appbundle

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentoslab/agentlab/runtime/apps"
)

// Module is the sample apps' import path prefix.
const Module = "github.com/agentoslab/agentlab/sampleapps/"

// Apps are the sample apps' short names (their folders under
// sampleapps/): the five apps of spec §9 and the test plugin.
var Apps = []string{"alarm", "calendar", "notes", "todo", "sms", "mcptest"}

// Controlled are the sample controlled apps (ACI services, no MCP
// tools): packed on request, not part of Apps' default set.
var Controlled = []string{"browser"}

// ErrUnknownApp is returned for a name not in Apps.
var ErrUnknownApp = errors.New("appbundle: not a sample app")

// Bundle is one packed app.
type Bundle struct {
	// App is the short name ("notes").
	App string
	// Path is the signed .agentapp file (mode 0644).
	Path string
	// Manifest is what Pack wrote: the app.json and the signed files.
	Manifest *apps.Manifest
}

// Set builds and packs the sample apps into one directory. Safe for
// concurrent use.
type Set struct {
	dir string
	key ed25519.PrivateKey

	mu      sync.Mutex         // guards the fields below; held while building
	srcDirs map[string]string  // app → source folder
	bins    map[string]string  // app → binary, once built
	bundles map[string]*Bundle // packed so far
}

// New returns a Set that writes under dir and signs with key (nil means a
// fresh key). dir must exist; binaries and bundles there are readable by
// every uid (0755 and 0644), so app uids can run them.
func New(dir string, key ed25519.PrivateKey) (*Set, error) {
	if key == nil {
		var err error
		if key, err = apps.GenerateKey(); err != nil {
			return nil, fmt.Errorf("appbundle: %w", err)
		}
	}
	return &Set{dir: dir, key: key, srcDirs: map[string]string{}, bins: map[string]string{}, bundles: map[string]*Bundle{}}, nil
}

// Key is the Set's signing key.
func (s *Set) Key() ed25519.PrivateKey { return s.key }

// buildLocked compiles the binaries of names not built yet in one go
// build, which shares the compilation of everything the apps have in
// common, and finds their source folders.
func (s *Set) buildLocked(ctx context.Context, names []string) error {
	var todo []string
	for _, a := range names {
		if err := known(a); err != nil {
			return err
		}
		if _, ok := s.bins[a]; !ok && !slices.Contains(todo, a) {
			todo = append(todo, a)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	binDir := filepath.Join(s.dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("appbundle: %w", err)
	}
	var cmds, pkgs []string
	for _, a := range todo {
		pkgs = append(pkgs, Module+a)
		cmds = append(cmds, Module+a+"/cmd/"+a)
	}
	// With -o naming a directory, each binary lands there under its name.
	if _, err := goTool(ctx, append([]string{"build", "-o", binDir + string(filepath.Separator)}, cmds...)...); err != nil {
		return err
	}
	out, err := goTool(ctx, append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}"}, pkgs...)...)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		imp, dir, _ := strings.Cut(line, "\t")
		s.srcDirs[strings.TrimPrefix(imp, Module)] = dir
	}
	for _, a := range todo {
		if s.srcDirs[a] == "" {
			return fmt.Errorf("appbundle: go list did not find %s", Module+a)
		}
		s.bins[a] = filepath.Join(binDir, a)
	}
	return nil
}

// Build builds the binaries of the named apps (every app of Apps when
// none is named) that are not built yet, in one go build.
func (s *Set) Build(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		names = Apps
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buildLocked(ctx, names)
}

func goTool(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("appbundle: go %s: %w\n%s", args[0], err, stderr.String())
	}
	return stdout.String(), nil
}

func known(app string) error {
	if !slices.Contains(Apps, app) && !slices.Contains(Controlled, app) {
		return fmt.Errorf("%w: %q", ErrUnknownApp, app)
	}
	return nil
}

// Binary returns the path of app's binary, building it the first time.
func (s *Set) Binary(ctx context.Context, app string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.buildLocked(ctx, []string{app}); err != nil {
		return "", err
	}
	return s.bins[app], nil
}

// SourceDir returns app's source folder (sampleapps/<app>).
func (s *Set) SourceDir(ctx context.Context, app string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.buildLocked(ctx, []string{app}); err != nil {
		return "", err
	}
	return s.srcDirs[app], nil
}

// Bundle returns app's signed bundle, building and packing it the first
// time.
func (s *Set) Bundle(ctx context.Context, app string) (*Bundle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bundles[app]; ok {
		return b, nil
	}
	if err := s.buildLocked(ctx, []string{app}); err != nil {
		return nil, err
	}
	b, err := s.pack(ctx, app)
	if err != nil {
		return nil, err
	}
	s.bundles[app] = b
	return b, nil
}

// All returns the bundles of the named apps (every app of Apps when none
// is named), in that order.
func (s *Set) All(ctx context.Context, names ...string) ([]*Bundle, error) {
	if len(names) == 0 {
		names = Apps
	}
	if err := s.Build(ctx, names...); err != nil {
		return nil, err
	}
	out := make([]*Bundle, 0, len(names))
	for _, a := range names {
		b, err := s.Bundle(ctx, a)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// pack stages app.json, the binary for this machine's ABI and the plugin
// assets, and packs them.
func (s *Set) pack(ctx context.Context, app string) (*Bundle, error) {
	src := s.srcDirs[app]
	stage, err := os.MkdirTemp(s.dir, "stage-"+app+"-")
	if err != nil {
		return nil, fmt.Errorf("appbundle: %w", err)
	}
	defer os.RemoveAll(stage)
	abi := apps.HostABI()
	if abi == "" {
		return nil, fmt.Errorf("appbundle: this machine's architecture has no bundle ABI")
	}
	appJSON, err := os.ReadFile(filepath.Join(src, apps.AppJSONName))
	if err != nil {
		return nil, fmt.Errorf("appbundle: %w", err)
	}
	a, err := apps.ParseApp(appJSON)
	if err != nil {
		return nil, fmt.Errorf("appbundle: %s: %w", app, err)
	}
	if err := copyFile(filepath.Join(stage, apps.AppJSONName), filepath.Join(src, apps.AppJSONName), 0o644); err != nil {
		return nil, err
	}
	if err := copyFile(filepath.Join(stage, filepath.FromSlash(apps.BinaryPath(abi, a.Binary))), s.bins[app], 0o755); err != nil {
		return nil, err
	}
	assets := filepath.Join(src, "assets")
	err = filepath.WalkDir(assets, func(p string, d fs.DirEntry, err error) error {
		if p == assets && errors.Is(err, fs.ErrNotExist) {
			return nil // a controlled app has no plugin assets
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		return copyFile(filepath.Join(stage, rel), p, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("appbundle: %s assets: %w", app, err)
	}
	path := filepath.Join(s.dir, a.Package+".agentapp")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("appbundle: %w", err)
	}
	m, err := apps.Pack(ctx, os.DirFS(stage), s.key, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("appbundle: pack %s: %w", app, err)
	}
	return &Bundle{App: app, Path: path, Manifest: m}, nil
}

func copyFile(dst, src string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("appbundle: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("appbundle: %w", err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		return fmt.Errorf("appbundle: %w", err)
	}
	return nil
}
