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
	dir, err := os.MkdirTemp("", "calendar-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "calendar")
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
	env := []string{"AGENTOS_APP_DATA=" + filepath.Join(dir, "data"), "AGENTOS_SYSTEM_DATA=" + filepath.Join(dir, "sys"), "TZ=Asia/Shanghai"}
	steps := []struct {
		args []string
		code int
		key  string // a key the document must have
	}{
		{[]string{"seed"}, 0, "inserted"},
		{[]string{"tool", "event_create", `{"title":"e2e","start":"2026-10-12T15:00:00+08:00"}`}, 0, "result"},
		{[]string{"tool", "event_get", `{"id":"sys:1"}`}, 1, "isError"},
		{[]string{"set", "permission", "granted"}, 0, "permission"},
		{[]string{"tool", "event_get", `{"id":"sys:1"}`}, 0, "result"},
		{[]string{"dump"}, 0, "reminders_scheduled"},
		{[]string{"set", "permission"}, 2, "error"},
		{[]string{"reset"}, 0, "remaining_scheduled"},
		{[]string{"clear"}, 0, "cleared"},
	}
	for _, s := range steps {
		code, doc := run(t, env, s.args...)
		if code != s.code || doc[s.key] == nil {
			t.Fatalf("%v: exit %d, doc %v; want exit %d with %q", s.args, code, doc, s.code, s.key)
		}
	}
	_, doc := run(t, env, "dump")
	if doc["time_zone"] != "Asia/Shanghai" || doc["permission"] != "granted" {
		t.Fatalf("after reset: %v", doc)
	}
	// The provider is shared: its file lives in the system dir.
	if _, err := os.Stat(filepath.Join(dir, "sys", "calendar_provider.db")); err != nil {
		t.Fatal(err)
	}
}
