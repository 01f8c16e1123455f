package modelconf_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/modelconf"
)

const secret = "sk-test-UNIQUE-KEY-7f3a9c"

var seq atomic.Int64

type env struct {
	t      *testing.T
	dir    string
	prefix string
	store  *modelconf.Store
	logs   *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), prefix: fmt.Sprintf("mc%d-%d-", os.Getpid(), seq.Add(1)), logs: &bytes.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := modelconf.Open(e.dir, &modelconf.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	e.store = s
	srv := admin.NewServer(&admin.Options{Name: "@" + e.prefix + "agentos-admin", Logger: logger, Methods: modelconf.AdminMethods(s)})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return e
}

func (e *env) ctl(stdin string, args ...string) (int, string) {
	var out, errb bytes.Buffer
	code := admin.Ctl(context.Background(), append(admin.Verbs(), modelconf.CtlVerbs()...), append([]string{"--socket-prefix", e.prefix}, args...),
		admin.CtlIO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String() + errb.String()
}

func TestModelSetShowClear(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, _, ok := e.store.Current(); ok {
		t.Fatal("a model without configuration")
	}
	code, out := e.ctl(secret+"\n", "model", "set", "--provider", "openai", "--base-url", "https://api.example.com/v1",
		"--model", "m1", "--choices", "m1,m2", "--key-stdin", "--json")
	if code != 0 || strings.Contains(out, secret) || !strings.Contains(out, `"keySet":true`) || !strings.Contains(out, `"usable":true`) {
		t.Fatalf("set: %d %s", code, out)
	}
	cfg, p, ok := e.store.Current()
	if !ok || p == nil || cfg.Key != secret || cfg.Model != "m1" || len(cfg.Choices) != 2 {
		t.Fatalf("current = %v %v", cfg, ok)
	}
	conf, _ := os.ReadFile(filepath.Join(e.dir, modelconf.ConfigFile))
	if strings.Contains(string(conf), secret) {
		t.Fatal("key in model.json")
	}
	fi, err := os.Stat(filepath.Join(e.dir, modelconf.KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	// A restart reads both files.
	again, err := modelconf.Open(e.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, ok := again.Current(); !ok || c.Key != secret {
		t.Fatal("not restored")
	}
	// Changing the model without --key-stdin keeps the key.
	if code, out := e.ctl("", "model", "set", "--provider", "anthropic", "--base-url", "https://api.example.com", "--model", "c"); code != 0 {
		t.Fatalf("set without key: %d %s", code, out)
	}
	if c, _, _ := e.store.Current(); c.Key != secret || c.Provider != "anthropic" {
		t.Fatalf("after set without key: %v", c)
	}
	if code, out := e.ctl("", "model", "show"); code != 0 || !strings.Contains(out, "key set: true") || strings.Contains(out, secret) {
		t.Fatalf("show: %d %s", code, out)
	}
	if code, out := e.ctl("", "model", "clear", "--json"); code != 0 || !strings.Contains(out, `"configured":false`) {
		t.Fatalf("clear: %d %s", code, out)
	}
	if _, _, ok := e.store.Current(); ok {
		t.Fatal("model after clear")
	}
	if _, err := os.Stat(filepath.Join(e.dir, modelconf.KeyFile)); !os.IsNotExist(err) {
		t.Fatal("key file left")
	}
	if strings.Contains(e.logs.String(), secret) {
		t.Fatal("key in the logs")
	}
}

func TestModelSetRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
	}{
		{"key as argument", "", []string{"--provider", "openai", "--base-url", "u", "--model", "m", secret}, 2},
		{"no provider", "", []string{"--model", "m"}, 2},
		{"empty stdin key", "", []string{"--provider", "openai", "--base-url", "u", "--model", "m", "--key-stdin"}, 2},
		{"unknown provider", "", []string{"--provider", "gemini"}, 1},
		{"openai without model", "", []string{"--provider", "openai", "--base-url", "u"}, 1},
		{"choices without the model", "", []string{"--provider", "openai", "--base-url", "u", "--model", "m", "--choices", "a,b"}, 1},
		{"scripted", "", []string{"--provider", "scripted"}, 0},
	}
	for _, tt := range tests {
		code, out := e.ctl(tt.stdin, append([]string{"model", "set"}, tt.args...)...)
		if code != tt.code {
			t.Errorf("%s: exit %d, want %d: %s", tt.name, code, tt.code, out)
		}
		if strings.Contains(out, secret) {
			t.Errorf("%s: key echoed", tt.name)
		}
	}
	if c, p, ok := e.store.Current(); !ok || p == nil || c.Provider != "scripted" {
		t.Fatalf("scripted: %v %v", c, ok)
	}
}

func TestFallbackKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, modelconf.ConfigFile), []byte(`{"provider":"openai","baseUrl":"https://api.example.com/v1","model":"m"}`), 0o600)
	s, err := modelconf.Open(dir, &modelconf.Options{FallbackKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, ok := s.Current(); !ok || c.Key != secret {
		t.Fatalf("fallback key not used: %v", ok)
	}
	// A stored key wins; clearing forgets the fallback too.
	other := "sk-other"
	if err := s.Set(model.Config{Provider: "openai", BaseURL: "https://api.example.com/v1", Model: "m"}, &other); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := s.Current(); c.Key != other {
		t.Fatal("stored key not used")
	}
	s.Clear()
	if err := s.Set(model.Config{Provider: "openai", BaseURL: "https://api.example.com/v1", Model: "m"}, nil); err != nil {
		t.Fatal(err)
	}
	if c, p, ok := s.Current(); ok || p != nil || c.Key != "" {
		t.Fatal("a key after clear")
	}
	if !strings.Contains(fmt.Sprint(s.Show()), "false") {
		t.Fatal("show")
	}
}

func TestBrokenConfigRunsWithoutModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, modelconf.ConfigFile), []byte(`{"provider":"openai","x":1}`), 0o600)
	s, err := modelconf.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.Current(); ok || s.Show().Problem == "" {
		t.Fatalf("broken config: %+v", s.Show())
	}
}

// closed reports whether a lease's revoked channel is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLeaseRevokedByKeyRemoval(t *testing.T) {
	t.Parallel()
	openai := model.Config{Provider: "openai", BaseURL: "https://api.example.com/v1", Model: "m"}
	key := secret
	empty := ""
	tests := []struct {
		name string
		// set is the configuration leased; remove takes it away.
		set    func(*modelconf.Store) error
		remove func(*modelconf.Store) error
		// revoked: the leases taken before remove are withdrawn.
		revoked bool
		// usable: a lease after remove still has a model.
		usable bool
	}{
		{"clear", func(s *modelconf.Store) error { return s.Set(openai, &key) }, (*modelconf.Store).Clear, true, false},
		{"clear scripted", func(s *modelconf.Store) error { return s.Set(model.Config{Provider: "scripted"}, nil) }, (*modelconf.Store).Clear, true, false},
		{"set without the key", func(s *modelconf.Store) error { return s.Set(openai, &key) },
			func(s *modelconf.Store) error { return s.Set(openai, &empty) }, true, false},
		{"set with a new key", func(s *modelconf.Store) error { return s.Set(openai, &key) },
			func(s *modelconf.Store) error { other := "sk-other"; return s.Set(openai, &other) }, false, true},
		{"set keeping the key", func(s *modelconf.Store) error { return s.Set(openai, &key) },
			func(s *modelconf.Store) error { return s.Set(model.Config{Provider: "scripted"}, nil) }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := modelconf.Open(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.set(s); err != nil {
				t.Fatal(err)
			}
			_, p, before, ok := s.Lease()
			if !ok || p == nil || before == nil || closed(before) {
				t.Fatalf("lease before: ok=%v", ok)
			}
			if err := tt.remove(s); err != nil {
				t.Fatal(err)
			}
			if closed(before) != tt.revoked {
				t.Fatalf("revoked = %v, want %v", closed(before), tt.revoked)
			}
			_, _, after, ok := s.Lease()
			if ok != tt.usable || (ok && closed(after)) {
				t.Fatalf("lease after: ok=%v closed=%v", ok, ok && closed(after))
			}
		})
	}
}
