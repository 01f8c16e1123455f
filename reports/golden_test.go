package reports

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the current output")

// golden compares got with testdata/golden/name, or rewrites the file with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
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
		t.Errorf("%s differs from the golden file (run go test -update after checking the change):\n%s", name, firstDiff(want, got))
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got []byte) string {
	wl := bytes.Split(want, []byte("\n"))
	gl := bytes.Split(got, []byte("\n"))
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + string(w) + "\n  got:  " + string(g)
		}
	}
	return "(no line differs)"
}

func renderT(t testing.TB, r *Run, f Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, r, f); err != nil {
		t.Fatalf("Render %s: %v", f, err)
	}
	return buf.Bytes()
}

// TestGolden pins every text format of the sample run. The console table
// is rendered to a buffer, so without colour and at the default width.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{FormatJSON, FormatJUnit, FormatMarkdown, FormatUpstream, FormatConsole} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			golden(t, f.FileName(), renderT(t, sampleRun(), f))
		})
	}
}

// TestDeterministic renders every format twice, from runs built separately
// and listed in different orders, and wants identical bytes.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	shuffled := sampleRun()
	s := shuffled.Scenarios
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	d := shuffled.Devices
	d[0], d[2] = d[2], d[0]
	for _, f := range allFormats {
		a := renderT(t, sampleRun(), f)
		b := renderT(t, shuffled, f)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: output depends on input order:\n%s", f, firstDiff(a, b))
		}
	}
}
