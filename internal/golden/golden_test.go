package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps failures instead of failing the
// test that drives it.
type recorder struct {
	testing.TB
	msgs  []string
	fatal bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// run calls f with a recorder on a goroutine of its own, as Fatal ends
// the goroutine it runs on.
func run(f func(tb testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		path      string
		got       string
		wantFail  bool
		wantFatal bool
		wantMsg   string
	}{
		{name: "same", path: path, got: "a\nb\n"},
		{name: "other line", path: path, got: "a\nc\n", wantFail: true, wantMsg: `first difference at line 2:` + "\n" + `  want "b"` + "\n" + `   got "c"`},
		{name: "no final newline", path: path, got: "a\nb", wantFail: true, wantMsg: "first difference at line 3"},
		{name: "missing file", path: filepath.Join(dir, "none.golden"), got: "x", wantFail: true, wantFatal: true, wantMsg: "run go test -update to create it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(func(tb testing.TB) { Check(tb, tt.path, []byte(tt.got)) })
			if failed := len(r.msgs) > 0; failed != tt.wantFail || r.fatal != tt.wantFatal {
				t.Fatalf("failed %v fatal %v (%q), want failed %v fatal %v", failed, r.fatal, r.msgs, tt.wantFail, tt.wantFatal)
			}
			if tt.wantFail && !strings.Contains(r.msgs[0], tt.wantMsg) {
				t.Errorf("message %q does not say %q", r.msgs[0], tt.wantMsg)
			}
		})
	}
}

// Under -update Check writes the file, creating its directory, and a
// second run without -update accepts it.
func TestCheckUpdate(t *testing.T) {
	old := *update
	t.Cleanup(func() { *update = old })
	path := filepath.Join(t.TempDir(), "testdata", "new.golden.json")
	*update = true
	if r := run(func(tb testing.TB) { JSON(tb, path, map[string]int{"b": 2, "a": 1}) }); len(r.msgs) > 0 {
		t.Fatalf("update: %q", r.msgs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": 1,\n  \"b\": 2\n}\n"; string(b) != want {
		t.Errorf("written %q, want %q", b, want)
	}
	*update = false
	if r := run(func(tb testing.TB) { JSON(tb, path, map[string]int{"a": 1, "b": 2}) }); len(r.msgs) > 0 {
		t.Errorf("check after update: %q", r.msgs)
	}
	if r := run(func(tb testing.TB) { JSON(tb, path, map[string]int{"a": 1}) }); len(r.msgs) != 1 {
		t.Errorf("a changed value passed: %q", r.msgs)
	}
}

func TestFirstDiff(t *testing.T) {
	t.Parallel()
	tests := []struct{ want, got, say string }{
		{"a\nb", "a\nb", "no difference"},
		{"a\nb", "a\nx", "line 2"},
		{"a", "b", "line 1"},
		{"a\n", "a\nmore\n", "line 2"},
		{"", "x", "line 1"},
	}
	for _, tt := range tests {
		if got := FirstDiff([]byte(tt.want), []byte(tt.got)); !strings.Contains(got, tt.say) {
			t.Errorf("FirstDiff(%q, %q) = %q, want it to say %q", tt.want, tt.got, got, tt.say)
		}
	}
}
