// Package build builds what the lab installs on devices: agentosd and
// every sample app cross-compiled per device ABI, the Magisk/KernelSU
// module zip per ABI (runtime/module), and one signed .agentapp bundle per
// app carrying a binary for every ABI (runtime/apps), signed with the
// lab's signing key.
//
// Binaries are static Linux executables (GOOS=linux, CGO_ENABLED=0,
// -trimpath): Android's kernel is Linux, so the same file runs on a phone,
// an emulator and a virtual device. x86_64 builds GOARCH amd64,
// arm64-v8a builds arm64. agentosd gets the version stamped with
// -ldflags -X.
//
// # Caching
//
// Everything is content-addressed in Options.CacheDir. A binary's key
// hashes the Go version, the build settings and, for every package it
// links, the module version (modules from the module cache are
// immutable) or the content of every source and embedded file (the main
// module), as `go list -deps` reports them. A module zip's key is its
// binary's key and its options; a bundle's key is its binaries' keys, its
// assets, its app.json and the signer. A second Build with no source
// change compiles and packs nothing: it lists packages, hashes files and
// links the cached artifacts into OutDir.
//
// Bundles and modules get a versionCode when first packed (seconds since
// 2020, above every code the cache gave before) and keep it while their
// content is cached, so re-provisioning unchanged content is a no-op on the
// device and changed content always upgrades.
//
// # Virtual devices
//
// With Options.Virtual, agentosd is built a second time with LabClockTag
// and packed in module zips of its own (Artifacts.Virtual, under
// OutDir/virtual): the runtime virtual devices install, whose clock the
// lab can advance (runtime/clock/labclock). Phones and emulators install
// the release runtime. The apps are built once and shared.
//
// # Signing key
//
// The bundle-signing key is Options.SigningKey: an ed25519 PEM file,
// created with mode 0600 (in a 0700 folder) on first use. It is never
// printed or logged; Artifacts carries only its signing digest.
package build

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/module"
	"golang.org/x/sys/unix"
)

// ABIs and their GOARCH.
var goarchOf = map[string]string{apps.ABIX8664: "amd64", apps.ABIArm64: "arm64"}

// HostABI is the ABI of the machine running the build.
func HostABI() string { return apps.HostABI() }

// LabClockTag is the build tag of the lab's clock
// (runtime/clock/labclock): a runtime whose owner can advance its clock
// (agentosd ctl clock advance), so scenarios that wait out the runtime's
// timers take no real time. Release builds lack it.
const LabClockTag = "agentos_labclock"

// Defaults of Options.
const (
	DefaultAgentosdPkg = "./runtime/cmd/agentosd"
	DefaultAppsDir     = "sampleapps"
	DefaultVersionVar  = "main.version"
)

// Options configure a build. Zero values take the documented defaults.
type Options struct {
	// Root is the source tree (the folder holding go.mod); default: the
	// first folder from the working directory upwards holding go.mod.
	Root string
	// OutDir receives the artifacts (<abi>/agentosd,
	// <abi>/agentos-module.zip, bundles/<app>.agentapp, artifacts.json);
	// default <CacheDir>/out, never the working directory.
	OutDir string
	// CacheDir holds the content-addressed cache; default
	// $XDG_CACHE_HOME/agentlab/build (~/.cache/agentlab/build).
	CacheDir string
	// ABIs to build for; default the host's ABI.
	ABIs []string
	// Version is stamped into agentosd, module.prop and each app.json's
	// versionName: [A-Za-z0-9._+-]{1,32}; default "dev".
	Version string
	// SigningKey is the bundle-signing key file, created (0600) when it
	// does not exist. Required.
	SigningKey string
	// Apps restricts the apps to these short names (folder names under
	// sampleapps); empty builds every app found.
	Apps []string
	// AgentosdPkg is agentosd's main package; default
	// DefaultAgentosdPkg. AppsDir holds the apps (<app>/cmd/<app> and
	// <app>/assets/agent-plugin); default DefaultAppsDir.
	AgentosdPkg string
	AppsDir     string
	// VersionVar is the variable -X stamps the version into; default
	// DefaultVersionVar.
	VersionVar string
	// Tags are Go build tags for every binary (go build -tags), such as
	// agentos_faultinject for a runtime that breaks rules on purpose
	// (runtime/internal/faultinject); default none. They are part of every
	// cache key.
	Tags []string
	// Virtual also builds the runtime for virtual devices: agentosd with
	// LabClockTag added to Tags, packed in module zips of its own
	// (Artifacts.Virtual under OutDir/virtual); the apps are the same.
	// Phones and emulators keep the release runtime. Nothing more is
	// built when Tags already hold LabClockTag.
	Virtual bool
	// Go is the go command; default "go" from PATH.
	Go string
	// Progress receives one line per step, for people; nil discards.
	Progress io.Writer
	// Logger receives debug details; nil discards.
	Logger *slog.Logger
}

// Artifacts is what a build produced, by path.
type Artifacts struct {
	Version string `json:"version"`
	// ABIs built, in order.
	ABIs []string `json:"abis"`
	// Agentosd and Modules are per ABI: the binary and the module zip.
	Agentosd map[string]string `json:"agentosd"`
	Modules  map[string]string `json:"modules"`
	// ModuleVersionCode is the modules' versionCode (module.prop).
	ModuleVersionCode int64 `json:"moduleVersionCode"`
	// Bundles are the app bundles, sorted by app name.
	Bundles []Bundle `json:"bundles"`
	// Tags are the build tags the binaries were built with.
	Tags []string `json:"tags,omitempty"`
	// Virtual is what virtual devices install when Options.Virtual was
	// set: agentosd and its modules built with LabClockTag as well, and
	// the same bundles. Nil otherwise.
	Virtual *Artifacts `json:"virtual,omitempty"`
	// SigningDigest identifies the lab's signing key (SHA-256 of the
	// public key); the key itself is never part of Artifacts.
	SigningDigest string `json:"signingDigest"`
	// Compiled counts the binaries compiled by this build (0 when every
	// binary came from the cache); Packed the modules and bundles written.
	Compiled int `json:"compiled"`
	Packed   int `json:"packed"`
}

// Bundle is one app's bundle.
type Bundle struct {
	// App is the short name (the folder under sampleapps: "notes").
	App     string `json:"app"`
	Package string `json:"package"`
	// Plugin is the plugin's name (plugin.json), "" without a plugin.
	Plugin        string   `json:"plugin,omitempty"`
	Path          string   `json:"path"`
	VersionCode   int64    `json:"versionCode"`
	ContentDigest string   `json:"contentDigest"`
	ABIs          []string `json:"abis"`
}

// Bundle returns the bundle of the app with this short name or package.
func (a *Artifacts) Bundle(name string) (Bundle, bool) {
	for _, b := range a.Bundles {
		if b.App == name || b.Package == name {
			return b, true
		}
	}
	return Bundle{}, false
}

// For returns the artifacts a device installs: Virtual for a virtual
// device when it was built, else a.
func (a *Artifacts) For(virtual bool) *Artifacts {
	if virtual && a.Virtual != nil {
		return a.Virtual
	}
	return a
}

// Module returns the module zip for abi.
func (a *Artifacts) Module(abi string) (string, error) {
	p, ok := a.Modules[abi]
	if !ok {
		return "", fmt.Errorf("no module built for %s (built: %s)", abi, strings.Join(a.ABIs, ", "))
	}
	return p, nil
}

// ErrNoSource: the tree lacks agentosd's main package or the apps folder.
var ErrNoSource = errors.New("source not found")

// target is one main package to build.
type target struct {
	name string // binary name
	pkg  string // ./relative/import/path
	app  string // app folder, "" for agentosd
}

func (o *Options) normalize() error {
	if o.Root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if o.Root, err = FindRoot(wd); err != nil {
			return err
		}
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join(o.CacheDir, "out")
	}
	if len(o.ABIs) == 0 {
		o.ABIs = []string{HostABI()}
	}
	for _, abi := range o.ABIs {
		if goarchOf[abi] == "" {
			return fmt.Errorf("build: unknown ABI %q (want %s or %s)", abi, apps.ABIX8664, apps.ABIArm64)
		}
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	for _, t := range o.Tags {
		if !tagRE.MatchString(t) {
			return fmt.Errorf("build: build tag %q: want letters, digits, _ and .", t)
		}
	}
	if o.SigningKey == "" {
		return errors.New("build: no signing key path")
	}
	if o.AgentosdPkg == "" {
		o.AgentosdPkg = DefaultAgentosdPkg
	}
	if o.AppsDir == "" {
		o.AppsDir = DefaultAppsDir
	}
	if o.VersionVar == "" {
		o.VersionVar = DefaultVersionVar
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// DefaultCacheDir is $XDG_CACHE_HOME/agentlab/build, else
// ~/.cache/agentlab/build.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "agentlab", "build")
	}
	return filepath.Join(os.TempDir(), "agentlab-build-cache")
}

// FindSource returns the source tree dir is in: the first folder from dir
// upwards holding go.mod and agentosd's main package (DefaultAgentosdPkg).
// Outside one (a released agentlab, another module) the error wraps
// ErrNoSource.
func FindSource(dir string) (string, error) {
	root, err := FindRoot(dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(DefaultAgentosdPkg))); err != nil {
		return "", fmt.Errorf("build: %s holds go.mod but not %s (not the agentlab source tree): %w", root, DefaultAgentosdPkg, ErrNoSource)
	}
	return root, nil
}

// FindRoot returns the first folder from dir upwards that holds go.mod.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("build: no go.mod in %s or above (run agentlab from the source tree): %w", dir, ErrNoSource)
		}
	}
}

// discover finds agentosd and the apps.
func discover(o *Options) ([]target, error) {
	agentosd := filepath.Join(o.Root, filepath.FromSlash(o.AgentosdPkg))
	if _, err := os.Stat(agentosd); err != nil {
		return nil, fmt.Errorf("build: agentosd's main package %s: %w", o.AgentosdPkg, ErrNoSource)
	}
	ts := []target{{name: "agentosd", pkg: o.AgentosdPkg}}
	mains, err := filepath.Glob(filepath.Join(o.Root, o.AppsDir, "*", "cmd", "*", "main.go"))
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for _, m := range mains {
		cmdDir := filepath.Dir(m)
		app := filepath.Base(filepath.Dir(filepath.Dir(cmdDir)))
		if filepath.Base(cmdDir) != app {
			continue // only <app>/cmd/<app> is the app's binary
		}
		if len(o.Apps) > 0 && !slices.Contains(o.Apps, app) {
			continue
		}
		rel, _ := filepath.Rel(o.Root, cmdDir)
		ts = append(ts, target{name: app, pkg: "./" + filepath.ToSlash(rel), app: app})
		found[app] = true
	}
	for _, a := range o.Apps {
		if !found[a] {
			return nil, fmt.Errorf("build: app %q: no %s/%s/cmd/%s/main.go: %w", a, o.AppsDir, a, a, ErrNoSource)
		}
	}
	sort.Slice(ts[1:], func(i, j int) bool { return ts[1+i].name < ts[1+j].name })
	return ts, nil
}

// builder is one Build call.
type builder struct {
	o       *Options
	h       hasher
	key     ed25519.PrivateKey
	arts    *Artifacts
	started time.Time
}

func (b *builder) progress(format string, args ...any) {
	fmt.Fprintf(b.o.Progress, "build: "+format+"\n", args...)
}

// tagRE is a Go build tag.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_.]{1,64}$`)

// tagsArg is the -tags flag for the build's tags, or nothing.
func (b *builder) tagsArg() []string {
	if len(b.o.Tags) == 0 {
		return nil
	}
	return []string{"-tags=" + strings.Join(b.o.Tags, ",")}
}

// Build builds every artifact for opts.ABIs; see the package doc.
func Build(ctx context.Context, opts *Options) (*Artifacts, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(o.Go); err != nil {
		return nil, fmt.Errorf("build: the go command is needed to build the runtime and apps: %w", err)
	}
	targets, err := discover(&o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("build: cache: %w", err)
	}
	unlock, err := lockDir(ctx, o.CacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	key, err := loadOrCreateKey(o.SigningKey)
	if err != nil {
		return nil, err
	}
	b := &builder{o: &o, key: key, started: time.Now(), arts: &Artifacts{
		Version: o.Version, ABIs: slices.Clone(o.ABIs), Tags: slices.Clone(o.Tags), Agentosd: map[string]string{}, Modules: map[string]string{},
		SigningDigest: apps.SigningDigest(key.Public().(ed25519.PublicKey)),
	}}
	goVersion, err := b.goVersion(ctx)
	if err != nil {
		return nil, err
	}
	// binKeys[abi][target name] → cached binary path.
	bins := map[string]map[string]string{}
	binKeys := map[string]map[string]string{}
	for _, abi := range o.ABIs {
		paths, keys, err := b.binaries(ctx, abi, goVersion, targets)
		if err != nil {
			return nil, err
		}
		bins[abi], binKeys[abi] = paths, keys
	}
	if err := b.modules(ctx, bins, binKeys); err != nil {
		return nil, err
	}
	for _, t := range targets[1:] {
		if err := b.bundle(ctx, t, bins, binKeys); err != nil {
			return nil, err
		}
	}
	if o.Virtual && !slices.Contains(o.Tags, LabClockTag) {
		if err := b.virtual(ctx, goVersion, targets[0]); err != nil {
			return nil, err
		}
	}
	manifest, _ := json.MarshalIndent(b.arts, "", "  ")
	if err := writeAtomic(filepath.Join(o.OutDir, ManifestFile), append(manifest, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	b.progress("done in %s: %d compiled, %d packed, %d bundles, modules for %s → %s",
		time.Since(b.started).Round(time.Millisecond), b.arts.Compiled, b.arts.Packed, len(b.arts.Bundles), strings.Join(o.ABIs, ", "), o.OutDir)
	return b.arts, nil
}

// virtual builds agentosd (target t) again with LabClockTag, and its
// modules, under OutDir/virtual: the runtime virtual devices install. It
// shares the cache (and the lock Build holds) and the bundles.
func (b *builder) virtual(ctx context.Context, goVersion string, t target) error {
	vo := *b.o
	vo.Tags = append(slices.Clone(b.o.Tags), LabClockTag)
	vo.OutDir = filepath.Join(b.o.OutDir, "virtual")
	vb := &builder{o: &vo, key: b.key, started: b.started, arts: &Artifacts{
		Version: vo.Version, ABIs: slices.Clone(vo.ABIs), Tags: slices.Clone(vo.Tags), Agentosd: map[string]string{}, Modules: map[string]string{},
		Bundles: b.arts.Bundles, SigningDigest: b.arts.SigningDigest,
	}}
	vb.progress("virtual devices: agentosd with %s", LabClockTag)
	bins := map[string]map[string]string{}
	binKeys := map[string]map[string]string{}
	for _, abi := range vo.ABIs {
		paths, keys, err := vb.binaries(ctx, abi, goVersion, []target{t})
		if err != nil {
			return err
		}
		bins[abi], binKeys[abi] = paths, keys
	}
	if err := vb.modules(ctx, bins, binKeys); err != nil {
		return err
	}
	b.arts.Compiled += vb.arts.Compiled
	b.arts.Packed += vb.arts.Packed
	vb.arts.Compiled, vb.arts.Packed = 0, 0
	b.arts.Virtual = vb.arts
	return nil
}

func (b *builder) goVersion(ctx context.Context) (string, error) {
	cmd := goCommand(ctx, b.o.Go, b.o.Root, "", "env", "GOVERSION")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build: go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ldflags are the link flags of target t.
func (b *builder) ldflags(t target) string {
	f := "-s -w -buildid="
	if t.app == "" {
		f += " -X " + b.o.VersionVar + "=" + b.o.Version
	}
	return f
}

// binaries makes sure every target is compiled for abi, compiling only
// those whose key is not cached, and links them into OutDir/<abi>/.
func (b *builder) binaries(ctx context.Context, abi, goVersion string, targets []target) (map[string]string, map[string]string, error) {
	goarch := goarchOf[abi]
	pkgs := make([]string, len(targets))
	for i, t := range targets {
		pkgs[i] = t.pkg
	}
	listed, err := goList(ctx, b.o.Go, b.o.Root, goarch, b.tagsArg(), pkgs)
	if err != nil {
		return nil, nil, err
	}
	// go list reports import paths; map our relative packages to them.
	importOf, err := b.importPaths(ctx, goarch, pkgs)
	if err != nil {
		return nil, nil, err
	}
	paths, keys := map[string]string{}, map[string]string{}
	var missing []target
	for _, t := range targets {
		settings := []string{goVersion, "GOOS=linux", "GOARCH=" + goarch, "CGO_ENABLED=0", "-trimpath", "ldflags=" + b.ldflags(t)}
		if len(b.o.Tags) > 0 {
			settings = append(settings, "tags="+strings.Join(b.o.Tags, ","))
		}
		k, err := binaryKey(&b.h, listed, importOf[t.pkg], settings)
		if err != nil {
			return nil, nil, fmt.Errorf("build %s for %s: %w", t.name, abi, err)
		}
		keys[t.name] = k
		paths[t.name] = filepath.Join(b.o.CacheDir, "bin", k[:2], k, t.name)
		if _, err := os.Stat(paths[t.name]); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		b.progress("%s: %d binaries up to date", abi, len(targets))
	} else {
		names := make([]string, len(missing))
		for i, t := range missing {
			names[i] = t.name
		}
		b.progress("%s: compiling %s", abi, strings.Join(names, ", "))
		start := time.Now()
		if err := b.compile(ctx, goarch, missing, paths); err != nil {
			return nil, nil, err
		}
		b.arts.Compiled += len(missing)
		b.progress("%s: compiled %d in %s", abi, len(missing), time.Since(start).Round(time.Millisecond))
	}
	for _, t := range targets {
		if t.app == "" {
			dst := filepath.Join(b.o.OutDir, abi, "agentosd")
			if err := place(paths[t.name], dst); err != nil {
				return nil, nil, fmt.Errorf("build: %w", err)
			}
			b.arts.Agentosd[abi] = dst
		}
	}
	return paths, keys, nil
}

// importPaths maps relative package patterns to import paths.
func (b *builder) importPaths(ctx context.Context, goarch string, pkgs []string) (map[string]string, error) {
	args := append(append([]string{"list"}, b.tagsArg()...), "-f", "{{.ImportPath}}")
	cmd := goCommand(ctx, b.o.Go, b.o.Root, goarch, append(args, pkgs...)...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(pkgs) {
		return nil, fmt.Errorf("go list: %d packages for %d patterns", len(lines), len(pkgs))
	}
	m := map[string]string{}
	for i, p := range pkgs {
		m[p] = lines[i]
	}
	return m, nil
}

// compile builds targets in one go build per distinct link flags and
// moves each binary into its cache slot.
func (b *builder) compile(ctx context.Context, goarch string, targets []target, paths map[string]string) error {
	tmp, err := os.MkdirTemp(b.o.CacheDir, "compile-")
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	defer os.RemoveAll(tmp)
	groups := map[string][]target{}
	for _, t := range targets {
		groups[b.ldflags(t)] = append(groups[b.ldflags(t)], t)
	}
	for flags, ts := range groups {
		args := append(append([]string{"build"}, b.tagsArg()...), "-trimpath", "-ldflags", flags, "-o", tmp+string(filepath.Separator))
		for _, t := range ts {
			args = append(args, t.pkg)
		}
		out, err := goCommand(ctx, b.o.Go, b.o.Root, goarch, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build (GOARCH=%s): %w\n%s", goarch, err, firstLines(string(out), 30))
		}
		for _, t := range ts {
			dst := paths[t.name]
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("build: %w", err)
			}
			if err := os.Rename(filepath.Join(tmp, t.name), dst); err != nil {
				return fmt.Errorf("build: %w", err)
			}
		}
	}
	return nil
}

// versionCode is the next versionCode the cache gives out: seconds since
// 2020, above every code given before.
func (b *builder) versionCode() (int64, error) {
	path := filepath.Join(b.o.CacheDir, "last-version-code")
	var last int64
	if data, err := os.ReadFile(path); err == nil {
		fmt.Sscan(string(data), &last)
	}
	code := max(time.Now().Unix()-1577836800, last+1)
	if err := writeAtomic(path, []byte(fmt.Sprint(code)), 0o644); err != nil {
		return 0, err
	}
	return code, nil
}

// entry is the metadata of a cached module or bundle.
type entry struct {
	VersionCode   int64  `json:"versionCode"`
	ContentDigest string `json:"contentDigest,omitempty"`
	Package       string `json:"package,omitempty"`
}

func readEntry(path string) (entry, bool) {
	var e entry
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &e) != nil || e.VersionCode <= 0 {
		return entry{}, false
	}
	return e, true
}

// modules packs (or finds) the module zip for every ABI. All ABIs share
// one versionCode, given when the set of agentosd binaries first appears.
func (b *builder) modules(ctx context.Context, bins, binKeys map[string]map[string]string) error {
	var parts []string
	for _, abi := range b.o.ABIs {
		parts = append(parts, abi, binKeys[abi]["agentosd"])
	}
	setKey := keyOf(append([]string{"module-set", b.o.Version}, parts...)...)
	metaPath := filepath.Join(b.o.CacheDir, "modules", setKey+".json")
	e, ok := readEntry(metaPath)
	if !ok {
		code, err := b.versionCode()
		if err != nil {
			return fmt.Errorf("build: %w", err)
		}
		e = entry{VersionCode: code}
	}
	b.arts.ModuleVersionCode = e.VersionCode
	for _, abi := range b.o.ABIs {
		k := keyOf("module", abi, binKeys[abi]["agentosd"], b.o.Version, fmt.Sprint(e.VersionCode))
		zip := filepath.Join(b.o.CacheDir, "modules", k+".zip")
		if _, err := os.Stat(zip); err != nil {
			if err := os.MkdirAll(filepath.Dir(metaPath), 0o755); err != nil {
				return fmt.Errorf("build: %w", err)
			}
			f, err := os.CreateTemp(filepath.Dir(metaPath), ".module-*")
			if err != nil {
				return fmt.Errorf("build: %w", err)
			}
			err = module.Pack(ctx, module.Options{ABI: abi, Version: b.o.Version, VersionCode: e.VersionCode, AgentosdPath: bins[abi]["agentosd"]}, f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(f.Name(), zip)
			}
			if err != nil {
				os.Remove(f.Name())
				return fmt.Errorf("build: module for %s: %w", abi, err)
			}
			b.arts.Packed++
			b.progress("%s: packed module %s (versionCode %d)", abi, module.ID, e.VersionCode)
		} else {
			b.progress("%s: module up to date (versionCode %d)", abi, e.VersionCode)
		}
		dst := filepath.Join(b.o.OutDir, abi, "agentos-module.zip")
		if err := place(zip, dst); err != nil {
			return fmt.Errorf("build: %w", err)
		}
		b.arts.Modules[abi] = dst
	}
	if !ok {
		data, _ := json.Marshal(e)
		if err := writeAtomic(metaPath, data, 0o644); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	return nil
}

// bundle packs (or finds) the bundle of app t.
func (b *builder) bundle(ctx context.Context, t target, bins, binKeys map[string]map[string]string) error {
	appDir := filepath.Join(b.o.Root, b.o.AppsDir, t.app)
	assets := filepath.Join(appDir, "assets", "agent-plugin")
	assetsKey, err := treeKey(&b.h, assets)
	if err != nil {
		return fmt.Errorf("build: %s assets: %w", t.app, err)
	}
	// The key covers everything but the versionCode, which the cache
	// entry keeps.
	probeJSON, _, err := appJSON(appDir, t.app, 1, b.o.Version)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	parts := []string{"bundle", t.app, string(probeJSON), assetsKey, b.arts.SigningDigest}
	for _, abi := range b.o.ABIs {
		parts = append(parts, abi, binKeys[abi][t.name])
	}
	k := keyOf(parts...)
	dir := filepath.Join(b.o.CacheDir, "bundles", k[:2])
	zip := filepath.Join(dir, k+".agentapp")
	metaPath := filepath.Join(dir, k+".json")
	e, ok := readEntry(metaPath)
	if _, err := os.Stat(zip); err != nil || !ok {
		code, err := b.versionCode()
		if err != nil {
			return fmt.Errorf("build: %w", err)
		}
		m, err := b.pack(ctx, t, appDir, assets, code, bins, zip)
		if err != nil {
			return err
		}
		e = entry{VersionCode: code, ContentDigest: m.ContentDigest, Package: m.App.Package}
		data, _ := json.Marshal(e)
		if err := writeAtomic(metaPath, data, 0o644); err != nil {
			return fmt.Errorf("build: %w", err)
		}
		b.arts.Packed++
		b.progress("bundle %s: packed %s (versionCode %d)", t.app, e.Package, e.VersionCode)
	} else {
		b.progress("bundle %s: up to date", t.app)
	}
	dst := filepath.Join(b.o.OutDir, "bundles", t.app+".agentapp")
	if err := place(zip, dst); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	b.arts.Bundles = append(b.arts.Bundles, Bundle{App: t.app, Package: e.Package, Plugin: pluginName(assets), Path: dst,
		VersionCode: e.VersionCode, ContentDigest: e.ContentDigest, ABIs: slices.Clone(b.o.ABIs)})
	return nil
}

// pack stages the bundle's files and signs them into zip.
func (b *builder) pack(ctx context.Context, t target, appDir, assets string, code int64, bins map[string]map[string]string, zip string) (*apps.Manifest, error) {
	data, _, err := appJSON(appDir, t.app, code, b.o.Version)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(zip), 0o755); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(zip), ".stage-")
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	defer os.RemoveAll(stage)
	if err := os.WriteFile(filepath.Join(stage, apps.AppJSONName), data, 0o644); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	for _, abi := range b.o.ABIs {
		if err := place(bins[abi][t.name], filepath.Join(stage, filepath.FromSlash(apps.BinaryPath(abi, t.name)))); err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
	}
	if _, err := os.Stat(assets); err == nil {
		if err := copyTree(assets, filepath.Join(stage, filepath.FromSlash(apps.PluginDir))); err != nil {
			return nil, fmt.Errorf("build: %s assets: %w", t.app, err)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(zip), ".bundle-*")
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	m, err := apps.Pack(ctx, os.DirFS(stage), b.key, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), zip)
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("build: bundle %s: %w", t.app, err)
	}
	return m, nil
}

// copyTree copies the regular files under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, out)
		}
		return fmt.Errorf("%s: not a regular file", path)
	})
}

// lockDir takes an exclusive lock on dir's lock file, so that two builds
// sharing a cache take turns.
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build: cache lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("build: cache lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("build: waiting for another build using %s: %w", dir, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// loadOrCreateKey reads the signing key, creating it (0600, in a 0700
// folder) when it does not exist.
func loadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	key, err := apps.ReadKeyFile(path)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("build: signing key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("build: signing key: %w", err)
	}
	k, err := apps.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("build: signing key: %w", err)
	}
	if err := apps.WriteKeyFile(path, k); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("build: signing key: %w", err)
	}
	// Read back what is on disk: another build may have written it first.
	key, err = apps.ReadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("build: signing key: %w", err)
	}
	return key, nil
}
