package archtest

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/agentoslab/agentlab"

type pkg struct {
	Dir        string
	ImportPath string
	Name       string
	Doc        string
	Deps       []string
	Imports    []string
	GoFiles    []string
	Standard   bool
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("no packages listed")
	}
	return pkgs
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.Name == "main" || len(p.GoFiles) == 0 {
			continue
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment", p.ImportPath)
		}
	}
}

func TestNoGrabBagPackages(t *testing.T) {
	for _, p := range listPackages(t) {
		switch path.Base(p.ImportPath) {
		case "util", "utils", "common", "helpers", "misc", "models":
			t.Errorf("%s: name packages by what they hold", p.ImportPath)
		}
	}
}

// The runtime ships to phones on its own: it must not pull in the lab,
// the devices layer or the sample apps.
func TestRuntimeImportsNoLabCode(t *testing.T) {
	for _, p := range listPackages(t) {
		if !strings.HasPrefix(p.ImportPath, module+"/runtime/") {
			continue
		}
		for _, d := range p.Deps {
			for _, banned := range []string{"/lab", "/devices", "/sampleapps", "/reports", "/scenarios"} {
				if strings.HasPrefix(d, module+banned+"/") || d == module+banned {
					t.Errorf("%s depends on %s", p.ImportPath, d)
				}
			}
		}
	}
}

// App authors link the SDKs into their apps: they must stay small.
func TestSDKsStayLight(t *testing.T) {
	for _, p := range listPackages(t) {
		if !strings.HasPrefix(p.ImportPath, module+"/runtime/sdk/") {
			continue
		}
		for _, d := range p.Deps {
			for _, banned := range []string{"modernc.org/sqlite", module + "/runtime/engine", module + "/runtime/store", "github.com/openai/", "github.com/anthropics/"} {
				if strings.HasPrefix(d, banned) {
					t.Errorf("SDK package %s depends on %s", p.ImportPath, d)
				}
			}
		}
	}
}

// One clock (runtime/clock): no other package of the runtime declares a
// clock of its own, the fake clock is for tests only, and a release
// agentosd does not even link the code that could move its time.
func TestOneClock(t *testing.T) {
	const clockPkg = module + "/runtime/clock"
	virtualOnly := []string{clockPkg + "/internal/manual", clockPkg + "/internal/virtual", clockPkg + "/clocktest"}
	for _, p := range listPackages(t) {
		if !strings.HasPrefix(p.ImportPath, module+"/") {
			continue
		}
		for _, imp := range p.Imports { // non-test files only
			if imp == clockPkg+"/clocktest" {
				t.Errorf("%s imports the test clock outside its tests", p.ImportPath)
			}
		}
		if !strings.HasPrefix(p.ImportPath, module+"/runtime/") || strings.HasPrefix(p.ImportPath, clockPkg) {
			continue
		}
		for _, name := range clockTypes(t, p) {
			t.Errorf("%s declares its own clock type %s; use runtime/clock", p.ImportPath, name)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "./runtime/cmd/agentosd")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range virtualOnly {
		for _, d := range deps {
			if d == banned {
				t.Errorf("the release agentosd links %s", banned)
			}
		}
	}
	cmd = exec.Command("go", "list", "-tags", "agentos_labclock", "-deps", "./runtime/cmd/agentosd")
	cmd.Dir = "../.."
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), clockPkg+"/internal/virtual\n") {
		t.Error("the lab's agentosd (tag agentos_labclock) does not link the virtual clock")
	}
}

// clockTypes are the types named like a clock in p's non-test files.
func clockTypes(t *testing.T, p pkg) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, f := range p.GoFiles {
		file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				name := s.(*ast.TypeSpec).Name.Name
				if strings.EqualFold(name, "clock") || strings.EqualFold(name, "realClock") {
					out = append(out, name)
				}
			}
		}
	}
	return out
}
