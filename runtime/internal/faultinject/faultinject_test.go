package faultinject

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/faults"
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
	sites := map[string]int{}
	callRE := regexp.MustCompile(`faultinject\.Active\(faultinject\.(\w+)\)`)
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
			if !strings.Contains(line, "faultinject.Enabled && faultinject.Active(") {
				t.Errorf("%s:%d: faultinject.Active not guarded by faultinject.Enabled &&", path, i+1)
			}
			for _, m := range callRE.FindAllStringSubmatch(line, -1) {
				sites[m[1]]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every fault breaks something, and every call site names a listed
	// fault (by its constant, so a typo does not compile).
	names := map[string]string{}
	for _, c := range faultConsts(t) {
		names[c.ident] = c.value
	}
	for ident := range sites {
		if _, ok := names[ident]; !ok {
			t.Errorf("a call site names faultinject.%s, which is no fault constant", ident)
		}
	}
	for ident, value := range names {
		if sites[ident] == 0 {
			t.Errorf("fault %s (faultinject.%s) has no call site in the runtime", value, ident)
		}
	}
}

type faultConst struct{ ident, value string }

// faultConsts are the constants of doc.go's fault block, which Faults
// must list in full, each once.
func faultConsts(t *testing.T) []faultConst {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []faultConst
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || vs.Names[0].Name == "Env" || vs.Names[0].Name == "FileName" {
				continue
			}
			v, _ := strconv.Unquote(lit.Value)
			out = append(out, faultConst{vs.Names[0].Name, v})
		}
	}
	var values []string
	for _, c := range out {
		values = append(values, c.value)
	}
	if !slices.Equal(values, Faults) {
		t.Errorf("Faults %v, want every fault constant once, in order: %v", Faults, values)
	}
	return out
}

// At least 20 faults, each named in the package documentation.
func TestFaultsDocumented(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(Faults) < 20 {
		t.Errorf("%d faults, want at least 20", len(Faults))
	}
	for _, f := range Faults {
		if !regexp.MustCompile(`(?m)^//\t` + f + ` +\S`).Match(src) {
			t.Errorf("fault %s is not described in the package documentation", f)
		}
	}
}

// The public catalog (runtime/faults, what the lab reads) lists exactly
// these faults, in this order, each with a promise and a guard (soak_leak's is a soak: scenarios/soak).
func TestCatalogMatches(t *testing.T) {
	if got := faults.Names(); !slices.Equal(got, Faults) {
		t.Errorf("runtime/faults lists %v, want %v", got, Faults)
	}
	for _, f := range faults.All {
		if f.Promise == "" || len(f.Guards) == 0 && f.Name != SoakLeak {
			t.Errorf("fault %s has no promise or no guarding scenario", f.Name)
		}
	}
}
