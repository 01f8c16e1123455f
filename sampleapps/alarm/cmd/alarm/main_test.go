package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/sampleapps/alarm/internal/alarmclock"
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
		{[]string{"tool", "alarm_create", `{"time":"06:45","label":"e2e"}`}, 0, "result"},
		{[]string{"tool", "alarm_get", `{"id":999}`}, 1, "isError"},
		{[]string{"ring", "5"}, 0, "ringing"},
		{[]string{"tool", "alarm_dismiss"}, 0, "result"},
		{[]string{"dump"}, 0, "scheduled"},
		{[]string{"ring"}, 2, "error"},
		{[]string{"nope"}, 2, "error"},
		{[]string{"reset"}, 0, "remaining_registered"},
	}
	for _, s := range steps {
		code, doc := run(t, env, s.args...)
		if code != s.code || doc[s.key] == nil {
			t.Fatalf("%v: exit %d, doc %v; want exit %d with %q", s.args, code, doc, s.code, s.key)
		}
	}
	_, doc := run(t, env, "dump")
	if doc["total"] != 0.0 {
		t.Fatalf("after reset: %v", doc)
	}
	if tz := doc["system"].(map[string]any)["time_zone"]; tz != "Asia/Shanghai" {
		t.Fatalf("time_zone = %v", tz)
	}
	// --data wins over the environment; no data dir at all is a usage error.
	if code, _ := run(t, nil, "--data", filepath.Join(dir, "other"), "dump"); code != 0 {
		t.Fatalf("--data: exit %d", code)
	}
	if code, _ := run(t, []string{"AGENTOS_APP_DATA="}, "dump"); code != 2 {
		t.Fatalf("no data dir: exit %d", code)
	}
}

// Apps under different uids read and rewrite the one system alarm clock
// file, whoever created it.
func TestAlarmClockAcrossUIDs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the app under other uids")
	}
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root, filepath.Dir(binPath(t))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(shared, "system")
	type app struct {
		uid  uint32
		data string
	}
	apps := []app{{10081, filepath.Join(root, "a")}, {10082, filepath.Join(root, "b")}}
	for _, a := range apps {
		if err := os.Mkdir(a.data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(a.data, int(a.uid), int(a.uid)); err != nil {
			t.Fatal(err)
		}
	}
	do := func(a app, args ...string) map[string]any {
		t.Helper()
		env := []string{"AGENTOS_APP_DATA=" + a.data, "AGENTOS_SYSTEM_DATA=" + sys, "TZ=UTC", "HOME=" + a.data}
		code, doc := runAs(t, &syscall.Credential{Uid: a.uid, Gid: a.uid}, env, args...)
		if code != 0 {
			t.Fatalf("uid %d %v: exit %d %v", a.uid, args, code, doc)
		}
		return doc
	}
	registered := func() []alarmclock.Entry {
		t.Helper()
		es, err := alarmclock.New(sys).Entries()
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	do(apps[0], "tool", "alarm_create", `{"time":"06:00"}`)
	if es := registered(); len(es) != 1 || es[0].FireAt.UTC().Hour() != 6 {
		t.Fatalf("after uid %d: %+v", apps[0].uid, es)
	}
	// The same package installed again under another uid takes over the
	// package's registrations in the file the first uid created.
	do(apps[1], "tool", "alarm_create", `{"time":"07:00"}`)
	if es := registered(); len(es) != 1 || es[0].FireAt.UTC().Hour() != 7 {
		t.Fatalf("after uid %d: %+v", apps[1].uid, es)
	}
	doc := do(apps[0], "tool", "alarm_system_next")
	r, _ := doc["result"].(map[string]any)
	if r == nil || r["owned_by_this_app"] != true {
		t.Fatalf("system next: %v", doc)
	}
	if next, _ := time.Parse(time.RFC3339, r["next_fire_at"].(string)); next.UTC().Hour() != 6 {
		t.Fatalf("system next: %v", r)
	}
}
