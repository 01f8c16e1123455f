package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path"
	"strings"
	"testing"
)

const module = "github.com/agentoslab/agentlab"

type pkg struct {
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
