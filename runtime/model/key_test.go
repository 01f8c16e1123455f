package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const secret = "sk-model-test-UNIQUE-a8d1f0c3"

func writeKey(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKeyFromFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
		wantErr error
		errText string
	}{
		{"0600 trimmed", "  " + secret + "\n", 0o600, secret, nil, ""},
		{"0400", secret, 0o400, secret, nil, ""},
		{"group readable", secret, 0o640, "", fs.ErrPermission, "chmod 600"},
		{"world readable", secret, 0o604, "", fs.ErrPermission, "chmod 600"},
		{"group writable", secret, 0o620, "", fs.ErrPermission, "group or others"},
		{"empty", "\n\n", 0o600, "", ErrNoKey, ""},
		{"two lines", secret + "\nsecond", 0o600, "", nil, "several lines"},
		{"too long", strings.Repeat("k", MaxKeyLen+1), 0o600, "", nil, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := writeKey(t, tc.content, tc.mode)
			got, err := KeyFromFile(p)
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("KeyFromFile = %q, %v", got, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("KeyFromFile accepted it")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("err = %q, want it to mention %q", err, tc.errText)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "kkkkkkkk") {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
}

func TestKeyFromFileNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := KeyFromFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	if _, err := KeyFromFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestKeyFromReader(t *testing.T) {
	t.Parallel()
	got, err := KeyFromReader(strings.NewReader("\t" + secret + "\r\n"))
	if err != nil || got != secret {
		t.Fatalf("KeyFromReader = %q, %v", got, err)
	}
	if _, err := KeyFromReader(strings.NewReader("   ")); !errors.Is(err, ErrNoKey) {
		t.Errorf("blank input: %v", err)
	}
}

func TestKeyFromEnv(t *testing.T) {
	t.Setenv("AGENTLAB_TEST_MODEL_KEY", " "+secret+"\n")
	got, err := LoadKey(KeySource{Env: "AGENTLAB_TEST_MODEL_KEY"})
	if err != nil || got != secret {
		t.Fatalf("LoadKey(env) = %q, %v", got, err)
	}
	t.Setenv("AGENTLAB_TEST_MODEL_KEY", "")
	if _, err := KeyFromEnv("AGENTLAB_TEST_MODEL_KEY"); !errors.Is(err, ErrNoKey) {
		t.Errorf("empty variable: %v", err)
	}
	if _, err := KeyFromEnv("AGENTLAB_TEST_MODEL_KEY_UNSET_X"); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "AGENTLAB_TEST_MODEL_KEY_UNSET_X") {
		t.Errorf("unset variable: %v", err)
	}
}

func TestLoadKeyNeedsOneSource(t *testing.T) {
	t.Parallel()
	for _, src := range []KeySource{{}, {Env: "A", File: "b"}, {File: "b", Reader: strings.NewReader("k")}} {
		if _, err := LoadKey(src); err == nil {
			t.Errorf("LoadKey(%+v) accepted", src)
		}
	}
	p := writeKey(t, secret, 0o600)
	if k, err := LoadKey(KeySource{File: p}); err != nil || k != secret {
		t.Errorf("LoadKey(file) = %q, %v", k, err)
	}
	if k, err := LoadKey(KeySource{Reader: strings.NewReader(secret)}); err != nil || k != secret {
		t.Errorf("LoadKey(reader) = %q, %v", k, err)
	}
}

// TestConfigNeverPrintsKey: every way a Config is printed, logged or
// marshalled leaves the key out.
func TestConfigNeverPrintsKey(t *testing.T) {
	t.Parallel()
	c := Config{Provider: "openai", BaseURL: "http://127.0.0.1:1/v1", Model: "m", Key: secret, Timeout: time.Second}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "cfg", c, "ptr", &c)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "cfg", c)
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprint(c), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c),
		fmt.Sprintf("%v", &c), fmt.Sprintf("%+v", &c), fmt.Sprintf("%#v", &c), string(j), logs.String(),
	} {
		if strings.Contains(s, secret) {
			t.Errorf("key printed in %q", s)
		}
	}
	if !strings.Contains(fmt.Sprintf("%#v", c), "KeySet:true") {
		t.Errorf("%%#v should say a key is set: %#v", c)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	var zero RetryPolicy
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := zero.Backoff(n); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, w)
		}
	}
	p := RetryPolicy{Base: 3 * time.Millisecond, Cap: 10 * time.Millisecond}
	for n, w := range []time.Duration{3, 6, 10, 10} {
		if got := p.Backoff(n); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	d := zero.WithDefaults()
	if d.MaxRetries != DefaultMaxRetries || d.WithDefaults() != d {
		t.Errorf("WithDefaults = %+v", d)
	}
	if n := (RetryPolicy{MaxRetries: -1}).WithDefaults().WithDefaults().MaxRetries; n >= 0 {
		t.Errorf("negative MaxRetries became %d", n)
	}
}
