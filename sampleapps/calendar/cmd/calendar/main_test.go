package main

import (
	"os"
	"path/filepath"
	"syscall"
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

// runAs runs the binary under cred (nil: as the test).
func runAs(t *testing.T, cred *syscall.Credential, env []string, args ...string) (int, map[string]any) {
	t.Helper()
	return sampletest.RunBinary(t, binPath(t), cred, env, args...)
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

// Two calendar apps under their own uids share the simulated provider the
// first one created, as two apps share CalendarContract on a phone.
func TestProviderSharedAcrossUIDs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the app under other uids")
	}
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root, filepath.Dir(binPath(t))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The launcher offers a world-writable place; the first app creates
	// the system dir in it.
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(shared, "system")
	apps := []struct {
		uid  uint32
		data string
	}{{10071, filepath.Join(root, "a")}, {10072, filepath.Join(root, "b")}}
	for _, a := range apps {
		if err := os.Mkdir(a.data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(a.data, int(a.uid), int(a.uid)); err != nil {
			t.Fatal(err)
		}
	}
	env := func(data string) []string {
		return []string{"AGENTOS_APP_DATA=" + data, "AGENTOS_SYSTEM_DATA=" + sys, "TZ=UTC", "HOME=" + data}
	}
	steps := []struct {
		app  int
		args []string
	}{
		{0, []string{"set", "permission", "granted"}},
		{1, []string{"set", "permission", "granted"}},
		{0, []string{"tool", "event_create", `{"title":"from a","start":"2026-10-12T09:00:00Z","calendar_id":"sys:1"}`}},
		{1, []string{"tool", "event_create", `{"title":"from b","start":"2026-10-12T10:00:00Z","calendar_id":"sys:1"}`}},
	}
	for _, s := range steps {
		a := apps[s.app]
		if code, doc := runAs(t, &syscall.Credential{Uid: a.uid, Gid: a.uid}, env(a.data), s.args...); code != 0 {
			t.Fatalf("uid %d %v: exit %d %v", a.uid, s.args, code, doc)
		}
	}
	a := apps[0]
	_, doc := runAs(t, &syscall.Credential{Uid: a.uid, Gid: a.uid}, env(a.data), "tool", "event_search", `{"query":"from"}`)
	if r, _ := doc["result"].(map[string]any); r == nil || r["total"] != 2.0 {
		t.Fatalf("app a sees %v", doc)
	}
	fi, err := os.Stat(sys)
	if err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("system dir mode %v (%v)", fi.Mode(), err)
	}
}
