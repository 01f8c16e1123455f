package scenarios

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/scenarios/internal/labtest"
)

// suiteFiles are every YAML file of the suite: scenarios, model scripts
// and fragments.
func suiteFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 60 {
		t.Fatalf("found %d YAML files; the suite is larger", len(out))
	}
	return out
}

// TestNoLanguageInStrings: no file of the suite breaks the language's
// style rules (labtest.StyleProblems): no line over 160 characters, no
// test-caller plan or model script inside a string.
func TestNoLanguageInStrings(t *testing.T) {
	t.Parallel()
	for _, f := range suiteFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range labtest.StyleProblems(b) {
			t.Errorf("%s:%s", f, p)
		}
	}
}
