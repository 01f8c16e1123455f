package build

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/apps"
)

// fakeTree writes a small module shaped like the project: agentosd and
// two apps.
func fakeTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                                                "module example.com/fake\n\ngo 1.26\n",
		"runtime/cmd/agentosd/main.go":                          "package main\n\nvar version = \"unset\"\n\nfunc main() { println(version) }\n",
		"sampleapps/demo/demo.go":                               "package demo\n\n// Hello says hello.\nfunc Hello() string { return \"hello\" }\n",
		"sampleapps/demo/cmd/demo/main.go":                      "package main\n\nimport \"example.com/fake/sampleapps/demo\"\n\nfunc main() { println(demo.Hello()) }\n",
		"sampleapps/demo/app.json":                              `{"package":"org.example.demo","label":"Demo","versionCode":7,"binary":"demo","services":[{"name":"org.example.demo.Svc","kind":"mcp","server":"demo"}],"commands":["dump"]}`,
		"sampleapps/demo/assets/agent-plugin/plugin.json":       `{"name":"demo","version":"1.0.0","description":"d"}`,
		"sampleapps/demo/assets/agent-plugin/skills/x/SKILL.md": "---\nname: x\ndescription: y\n---\nbody\n",
		"sampleapps/other/cmd/other/main.go":                    "package main\n\nfunc main() {}\n",
		"sampleapps/other/app.json":                             `{"package":"org.example.other","label":"Other","versionCode":1,"binary":"other"}`,
		// Not an app binary: cmd/<name> differs from the folder.
		"sampleapps/other/cmd/tool/main.go": "package main\n\nfunc main() {}\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func opts(t testing.TB, root string) *Options {
	state := t.TempDir()
	return &Options{Root: root, OutDir: filepath.Join(state, "out"), CacheDir: filepath.Join(state, "cache"),
		SigningKey: filepath.Join(state, "keys", "signing.key"), Version: "1.2.3"}
}

func TestBuildCaching(t *testing.T) {
	t.Parallel()
	root := fakeTree(t)
	o := opts(t, root)
	var progress bytes.Buffer
	o.Progress = &progress
	ctx := context.Background()

	first, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if first.Compiled != 3 || first.Packed != 3 {
		t.Errorf("first build: compiled %d packed %d, want 3 and 3 (module + 2 bundles)", first.Compiled, first.Packed)
	}
	abi := HostABI()
	if !slices.Equal(first.ABIs, []string{abi}) || first.Modules[abi] == "" || first.Agentosd[abi] == "" || len(first.Bundles) != 2 {
		t.Fatalf("artifacts %+v", first)
	}
	// agentosd carries the version.
	out, err := exec.Command(first.Agentosd[abi]).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1.2.3" {
		t.Errorf("agentosd prints %q (%v), want the stamped version", out, err)
	}
	// The key is private and never in the artifacts.
	fi, err := os.Stat(o.SigningKey)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signing key: %v %v", fi, err)
	}
	key, _ := apps.ReadKeyFile(o.SigningKey)
	demo, ok := first.Bundle("demo")
	if !ok || demo.Package != "org.example.demo" || demo.Plugin != "demo" {
		t.Fatalf("demo bundle: %+v", demo)
	}
	data, err := os.ReadFile(demo.Path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := apps.VerifyBytes(data)
	if err != nil {
		t.Fatalf("bundle does not verify: %v", err)
	}
	if m.SigningDigest != first.SigningDigest || m.SigningDigest != apps.SigningDigest(key.Public().(ed25519.PublicKey)) {
		t.Errorf("signer %s, artifacts say %s", m.SigningDigest, first.SigningDigest)
	}
	if m.App.VersionCode != demo.VersionCode || m.App.VersionName != "1.2.3" || !slices.Equal(m.ABIs, []string{abi}) || m.ContentDigest != demo.ContentDigest {
		t.Errorf("manifest %+v vs %+v", m.App, demo)
	}
	if _, ok := first.Bundle("tool"); ok {
		t.Error("a cmd/<x> that is not the app's own binary became a bundle")
	}

	// No source change: no work, same artifacts.
	progress.Reset()
	second, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if second.Compiled != 0 || second.Packed != 0 {
		t.Errorf("second build did work: compiled %d packed %d\n%s", second.Compiled, second.Packed, progress.String())
	}
	if second.ModuleVersionCode != first.ModuleVersionCode || !slices.EqualFunc(second.Bundles, first.Bundles, func(a, b Bundle) bool {
		return a.VersionCode == b.VersionCode && a.ContentDigest == b.ContentDigest
	}) {
		t.Errorf("second build changed versions:\n%+v\n%+v", first.Bundles, second.Bundles)
	}
	if !strings.Contains(progress.String(), "binaries up to date") {
		t.Errorf("progress:\n%s", progress.String())
	}

	// A source change rebuilds that app only, with a higher versionCode.
	os.WriteFile(filepath.Join(root, "sampleapps/demo/demo.go"), []byte("package demo\n\n// Hello says hello.\nfunc Hello() string { return \"hi\" }\n"), 0o644)
	third, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if third.Compiled != 1 || third.Packed != 1 {
		t.Errorf("after a change in demo: compiled %d packed %d, want 1 and 1", third.Compiled, third.Packed)
	}
	d3, _ := third.Bundle("demo")
	o3, _ := third.Bundle("other")
	o1, _ := first.Bundle("other")
	if d3.VersionCode <= demo.VersionCode || d3.ContentDigest == demo.ContentDigest {
		t.Errorf("changed demo: versionCode %d → %d", demo.VersionCode, d3.VersionCode)
	}
	if o3.VersionCode != o1.VersionCode || third.ModuleVersionCode != first.ModuleVersionCode {
		t.Error("an unchanged app or the module got a new versionCode")
	}

	// An asset change repacks without compiling.
	os.WriteFile(filepath.Join(root, "sampleapps/demo/assets/agent-plugin/skills/x/SKILL.md"), []byte("---\nname: x\ndescription: z\n---\nnew\n"), 0o644)
	fourth, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if fourth.Compiled != 0 || fourth.Packed != 1 {
		t.Errorf("after an asset change: compiled %d packed %d, want 0 and 1", fourth.Compiled, fourth.Packed)
	}

	// A new version recompiles agentosd (stamped) and repacks everything.
	o.Version = "1.2.4"
	fifth, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if fifth.Compiled != 1 || fifth.Packed != 3 || fifth.ModuleVersionCode <= first.ModuleVersionCode {
		t.Errorf("new version: compiled %d packed %d module %d", fifth.Compiled, fifth.Packed, fifth.ModuleVersionCode)
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	root := fakeTree(t)
	ctx := context.Background()

	o := opts(t, root)
	o.Apps = []string{"demo", "missing"}
	if _, err := Build(ctx, o); !errors.Is(err, ErrNoSource) {
		t.Errorf("unknown app: %v", err)
	}

	o = opts(t, root)
	o.ABIs = []string{"mips"}
	if _, err := Build(ctx, o); err == nil || !strings.Contains(err.Error(), `unknown ABI "mips"`) {
		t.Errorf("bad ABI: %v", err)
	}

	o = opts(t, root)
	os.Remove(filepath.Join(root, "sampleapps/other/app.json"))
	if _, err := Build(ctx, o); !errors.Is(err, ErrUnknownApp) {
		t.Errorf("app without app.json: %v", err)
	}

	o = opts(t, root)
	o.Apps = []string{"demo"}
	os.WriteFile(filepath.Join(root, "sampleapps/demo/demo.go"), []byte("package demo\n\nfunc Hello() string { return 1 }\n"), 0o644)
	if _, err := Build(ctx, o); err == nil || !strings.Contains(err.Error(), "go build") {
		t.Errorf("compile error: %v", err)
	}

	o = opts(t, t.TempDir())
	if _, err := Build(ctx, o); !errors.Is(err, ErrNoSource) {
		t.Errorf("tree without agentosd: %v", err)
	}

	o = opts(t, root)
	os.MkdirAll(filepath.Dir(o.SigningKey), 0o700)
	os.WriteFile(o.SigningKey, []byte("not a key"), 0o644)
	if _, err := Build(ctx, o); !errors.Is(err, apps.ErrKeyExposed) {
		t.Errorf("group-readable key: %v", err)
	}
}

func TestCrossABI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cross-compiles")
	}
	o := opts(t, fakeTree(t))
	o.ABIs = []string{apps.ABIX8664, apps.ABIArm64}
	a, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, abi := range o.ABIs {
		if a.Modules[abi] == "" || a.Agentosd[abi] == "" {
			t.Errorf("%s: %+v", abi, a)
		}
	}
	b, _ := a.Bundle("demo")
	data, _ := os.ReadFile(b.Path)
	m, err := apps.VerifyBytes(data)
	if err != nil || !slices.Equal(m.ABIs, []string{apps.ABIArm64, apps.ABIX8664}) {
		t.Errorf("bundle ABIs %v: %v", m.ABIs, err)
	}
}

// TestSampleAppFacts: every sample app gets an app.json that parses, with
// the plugin's display name as its label; an app folder without app.json
// must be one the build knows.
func TestSampleAppFacts(t *testing.T) {
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range sampleApps {
		dir := filepath.Join(root, DefaultAppsDir, name)
		data, a, err := appJSON(dir, name, 5, "v")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := apps.ParseApp(data); err != nil || a.VersionCode != 5 || a.Package != f.Package || a.Label == name {
			t.Errorf("%s: app.json %s: %v", name, data, err)
		}
	}
	if _, a, _ := appJSON(filepath.Join(root, DefaultAppsDir, "notes"), "notes", 1, "v"); a.Label != "备忘录" || !a.Caller || !a.HasCommand("ask_agent") {
		t.Errorf("notes app.json %+v", a)
	}
	dirs, _ := filepath.Glob(filepath.Join(root, DefaultAppsDir, "*", "cmd"))
	for _, d := range dirs {
		app := filepath.Base(filepath.Dir(d))
		if _, ok := sampleApps[app]; !ok {
			if _, err := os.Stat(filepath.Join(filepath.Dir(d), apps.AppJSONName)); err != nil {
				t.Errorf("sample app %s has no app.json and no row in the build's table", app)
			}
		}
	}
}

// Build tags reach every binary and the cache keys: a tagged build is its
// own artifact, and the untagged one stays cached.
func TestBuildTags(t *testing.T) {
	t.Parallel()
	root := fakeTree(t)
	tagged := "//go:build labtag\n\npackage main\n\nfunc init() { version += \"+tagged\" }\n"
	if err := os.WriteFile(filepath.Join(root, "runtime/cmd/agentosd/tagged.go"), []byte(tagged), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(t, root)
	ctx := context.Background()
	plain, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	abi := HostABI()
	run := func(a *Artifacts) string {
		out, err := exec.Command(a.Agentosd[abi]).CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(plain); got != "1.2.3" || len(plain.Tags) != 0 {
		t.Fatalf("untagged agentosd prints %q (tags %v)", got, plain.Tags)
	}
	o.Tags = []string{"labtag"}
	withTag, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(withTag); got != "1.2.3+tagged" || !slices.Equal(withTag.Tags, []string{"labtag"}) {
		t.Errorf("tagged agentosd prints %q (tags %v)", got, withTag.Tags)
	}
	if withTag.Compiled != 3 {
		t.Errorf("tagged build compiled %d binaries, want all 3 (the tag is in every key)", withTag.Compiled)
	}
	o.Tags = nil
	again, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Compiled != 0 || run(again) != "1.2.3" {
		t.Errorf("untagged again: compiled %d, prints %q", again.Compiled, run(again))
	}
	o.Tags = []string{"bad tag"}
	if _, err := Build(ctx, o); err == nil || !strings.Contains(err.Error(), "build tag") {
		t.Errorf("a malformed tag: %v", err)
	}
}

// TestLoadPrebuilt: a build's output folder, moved elsewhere, loads as
// prebuilt artifacts with its files found where they now are; a folder
// with a file missing or no manifest is refused.
func TestLoadPrebuilt(t *testing.T) {
	t.Parallel()
	o := opts(t, fakeTree(t))
	built, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "release")
	if err := os.Rename(o.OutDir, moved); err != nil {
		t.Fatal(err)
	}
	got, err := Load(moved)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != built.Version || got.SigningDigest != built.SigningDigest || !slices.Equal(got.ABIs, built.ABIs) || len(got.Bundles) != len(built.Bundles) {
		t.Errorf("loaded %+v, built %+v", got, built)
	}
	abi := got.ABIs[0]
	if got.Agentosd[abi] != filepath.Join(moved, abi, "agentosd") || got.Bundles[0].Path != filepath.Join(moved, "bundles", got.Bundles[0].App+".agentapp") {
		t.Errorf("paths not rebased on the new folder: %s, %s", got.Agentosd[abi], got.Bundles[0].Path)
	}
	if m, err := got.Module(abi); err != nil || !strings.HasPrefix(m, moved) {
		t.Errorf("module %s %v", m, err)
	}
	if miss := got.Covers([]string{abi, "arm64-v8a", "arm64-v8a"}); abi == "x86_64" && !slices.Equal(miss, []string{"arm64-v8a"}) {
		t.Errorf("Covers = %v", miss)
	}
	if err := os.Remove(got.Bundles[0].Path); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(moved); err == nil || !strings.Contains(err.Error(), "lack bundles/"+got.Bundles[0].App+".agentapp") {
		t.Errorf("a missing bundle: %v", err)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNoPrebuilt) {
		t.Errorf("an empty folder: %v", err)
	}
}

// TestFindSource: the source tree is the module holding agentosd's main
// package; another Go module is not one.
func TestFindSource(t *testing.T) {
	t.Parallel()
	root := fakeTree(t)
	if got, err := FindSource(filepath.Join(root, "sampleapps", "demo")); err != nil || got != root {
		t.Errorf("FindSource in the tree = %q, %v", got, err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module other\n"), 0o644)
	if _, err := FindSource(other); !errors.Is(err, ErrNoSource) {
		t.Errorf("FindSource in another module: %v", err)
	}
}

// TestDefaultOutDir: without OutDir the artifacts go under the cache,
// never into the working directory.
func TestDefaultOutDir(t *testing.T) {
	o := &Options{Root: t.TempDir(), CacheDir: t.TempDir(), SigningKey: "k"}
	if err := o.normalize(); err != nil {
		t.Fatal(err)
	}
	if o.OutDir != filepath.Join(o.CacheDir, "out") {
		t.Errorf("OutDir = %s", o.OutDir)
	}
}

// Virtual devices get agentosd built with the lab's clock tag, in modules
// of their own; phones and emulators keep the release runtime; the apps
// are one build for both, and a second build compiles nothing.
func TestVirtualRuntime(t *testing.T) {
	t.Parallel()
	root := fakeTree(t)
	tagged := "//go:build " + LabClockTag + "\n\npackage main\n\nfunc init() { version += \"+labclock\" }\n"
	if err := os.WriteFile(filepath.Join(root, "runtime/cmd/agentosd/labclock.go"), []byte(tagged), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(t, root)
	o.Virtual = true
	ctx := context.Background()
	arts, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	abi := HostABI()
	run := func(a *Artifacts) string {
		out, err := exec.Command(a.Agentosd[abi]).CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	v := arts.Virtual
	if v == nil {
		t.Fatal("no virtual-device artifacts")
	}
	if got := run(arts); got != "1.2.3" {
		t.Errorf("release agentosd prints %q", got)
	}
	if got := run(v); got != "1.2.3+labclock" || !slices.Equal(v.Tags, []string{LabClockTag}) {
		t.Errorf("virtual agentosd prints %q (tags %v)", got, v.Tags)
	}
	if arts.Compiled != 4 {
		t.Errorf("compiled %d, want 4: three binaries and agentosd once more (the apps are shared)", arts.Compiled)
	}
	relZip, _ := arts.Module(abi)
	virtZip, _ := v.Module(abi)
	if relZip == virtZip || v.ModuleVersionCode == arts.ModuleVersionCode || !strings.HasPrefix(virtZip, filepath.Join(o.OutDir, "virtual")) {
		t.Errorf("modules: release %s (%d), virtual %s (%d)", relZip, arts.ModuleVersionCode, virtZip, v.ModuleVersionCode)
	}
	if !reflect.DeepEqual(v.Bundles, arts.Bundles) {
		t.Errorf("virtual devices get other bundles: %+v", v.Bundles)
	}
	if arts.For(true) != v || arts.For(false) != arts || v.For(true) != v {
		t.Error("For picks the wrong artifacts")
	}
	again, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Compiled != 0 || again.Packed != 0 || again.Virtual == nil || again.Virtual.ModuleVersionCode != v.ModuleVersionCode {
		t.Errorf("second build: compiled %d, packed %d, virtual %+v", again.Compiled, again.Packed, again.Virtual)
	}
	// A build that is all lab already has nothing more to build.
	o.Tags = []string{LabClockTag}
	lab, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if lab.Virtual != nil || lab.For(true) != lab || run(lab) != "1.2.3+labclock" {
		t.Errorf("tagged build: virtual %v, prints %q", lab.Virtual, run(lab))
	}
}
