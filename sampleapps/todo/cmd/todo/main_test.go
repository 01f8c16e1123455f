package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// binPath is the app's binary, built once for the test binary; the
// tests run it as the launcher and the lab would.
func binPath(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, ".")
}

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m))
}

func run(t *testing.T, env []string, args ...string) (int, map[string]any) {
	t.Helper()
	return sampletest.RunBinary(t, binPath(t), nil, env, args...)
}

func TestBinary(t *testing.T) {
	dir := t.TempDir()
	env := []string{"AGENTOS_APP_DATA=" + filepath.Join(dir, "data"), "TZ=Asia/Shanghai"}
	steps := []struct {
		args []string
		code int
		key  string // a key the document must have
	}{
		{[]string{"seed"}, 0, "inserted"},
		{[]string{"tool", "todo_create", `{"title":"e2e","due":"2026-10-12"}`}, 0, "result"},
		{[]string{"tool", "todo_get", `{"id":"00000000"}`}, 1, "isError"},
		{[]string{"tool", "todo_summary"}, 0, "result"},
		{[]string{"dump"}, 0, "todos"},
		{[]string{"dump", "extra"}, 2, "error"},
		{[]string{"ring", "1"}, 2, "error"},
		{[]string{"reset"}, 0, "remaining_in_db"},
	}
	for _, s := range steps {
		code, doc := run(t, env, s.args...)
		if code != s.code || doc[s.key] == nil {
			t.Fatalf("%v: exit %d, doc %v; want exit %d with %q", s.args, code, doc, s.code, s.key)
		}
	}
	_, doc := run(t, env, "dump")
	if doc["total"] != 0.0 || doc["time_zone"] != "Asia/Shanghai" {
		t.Fatalf("after reset: %v", doc)
	}
}
