package faultinject

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const tag = "agentos_faultinject"

// The default build injects nothing, whatever the environment says.
func TestDefaultBuildInjectsNothing(t *testing.T) {
	if Enabled {
		t.Skip("built with the " + tag + " tag")
	}
	t.Setenv(Env, strings.Join(Faults, ","))
	for _, f := range Faults {
		if Active(f) {
			t.Errorf("Active(%q) in the default build", f)
		}
	}
}

// The tag decides which of this package's files compile: on.go only with
// it, off.go only without.
func TestTagSelectsFiles(t *testing.T) {
	for _, tc := range []struct {
		tags       []string
		want, skip string
	}{
		{nil, "off.go", "on.go"},
		{[]string{tag}, "on.go", "off.go"},
	} {
		ctx := build.Default
		ctx.BuildTags = tc.tags
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(pkg.GoFiles, tc.want) || slices.Contains(pkg.GoFiles, tc.skip) {
			t.Errorf("tags %v: files %v, want %s and not %s", tc.tags, pkg.GoFiles, tc.want, tc.skip)
		}
	}
}

// runtimeRoot is the runtime's source tree.
func runtimeRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(root) != "runtime" {
		t.Fatalf("%s is not the runtime's tree", root)
	}
	return root
}

// No file of the runtime outside this package carries the tag, and every
// call of Active is guarded by the constant Enabled, so a default build
// has no fault code at all: the calls are dead code the compiler drops.
func TestFaultCodeOnlyBehindTheConstant(t *testing.T) {
	root := runtimeRoot(t)
	self, _ := filepath.Abs(".")
	calls := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || filepath.Dir(path) == self {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			if strings.Contains(cg.Text(), tag) || strings.Contains(string(src[:f.Package]), tag) {
				t.Errorf("%s mentions the %s tag outside package faultinject", path, tag)
				break
			}
		}
		for i, line := range strings.Split(string(src), "\n") {
			if !strings.Contains(line, "faultinject.Active(") {
				continue
			}
			calls++
			if !strings.Contains(line, "faultinject.Enabled && faultinject.Active(") {
				t.Errorf("%s:%d: faultinject.Active not guarded by faultinject.Enabled &&", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(Faults) {
		t.Errorf("%d guarded call sites in the runtime, want one per fault (%d)", calls, len(Faults))
	}
}
