// Package golden compares what a test produced with a golden file kept
// in the package's testdata/, and rewrites the file instead when the
// test binary runs with -update (go test ./pkg -update), so a reviewed
// change of output is accepted in one step.
//
// Importing the package registers the -update flag: a test package that
// uses it must not declare its own.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Updating reports whether the test binary runs with -update, for tests
// that rewrite generated files of their own.
func Updating() bool { return *update }

// Check compares got with the file at path byte for byte; under -update
// it writes got there (creating the directory) instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update to accept the change):\n%s\n--- got\n%s\n--- want\n%s",
			path, FirstDiff(want, got), got, want)
	}
}

// JSON is Check of v as indented JSON with a final newline.
func JSON(t testing.TB, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	Check(t, path, append(got, '\n'))
}

// FirstDiff names the first line where got departs from want.
func FirstDiff(want, got []byte) string {
	wl := bytes.Split(want, []byte("\n"))
	gl := bytes.Split(got, []byte("\n"))
	for i := range max(len(wl), len(gl)) {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if i >= len(wl) || i >= len(gl) || !bytes.Equal(w, g) {
			return fmt.Sprintf("first difference at line %d:\n  want %q\n   got %q", i+1, w, g)
		}
	}
	return "no difference"
}
