package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var bin string

// TestMain builds the real binary once; the tests run it as the launcher
// and the lab would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "todo-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "todo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, env []string, args ...string) (int, map[string]any) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v: stdout is not one JSON object: %v", args, err)
	}
	if dec.More() {
		t.Fatalf("%v: more than one JSON document", args)
	}
	return code, doc
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
