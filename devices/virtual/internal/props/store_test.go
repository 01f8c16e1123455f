//go:build linux

package props

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSetRules(t *testing.T) {
	t.Parallel()
	s := NewStore("", nil)
	tests := []struct {
		name, value string
		wantErr     error
	}{
		{"ro.product.model", "Pixel", nil},
		{"ro.product.model", "Other", ErrReadOnly},
		{"debug.x", strings.Repeat("v", MaxValueLen), nil},
		{"debug.y", strings.Repeat("v", MaxValueLen+1), ErrTooLong},
		{"ro.build.fingerprint", strings.Repeat("f", 200), nil},
		{"bad name", "x", ErrBadName},
		{".lead", "x", ErrBadName},
		{"a..b", "x", ErrBadName},
		{"debug.nl", "a\nb", ErrTooLong},
	}
	for _, tt := range tests {
		err := s.Set(tt.name, tt.value)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Set(%q) = %v, want %v", tt.name, err, tt.wantErr)
		}
	}
	if err := s.Reset("ro.product.model", "Reset"); err != nil {
		t.Fatalf("Reset of ro.*: %v", err)
	}
	if v, _ := s.Get("ro.product.model"); v != "Reset" {
		t.Errorf("after Reset: %q", v)
	}
}

func TestMayWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		uid  int
		name string
		want bool
	}{
		{0, "ro.anything", true},
		{2000, "debug.x", true},
		{2000, "persist.x", true},
		{2000, "sys.powerctl", true},
		{2000, "ro.debuggable", false},
		{2000, "sys.boot_completed", false},
		{10123, "debug.x", true},
		{10123, "persist.x", false},
	}
	for _, tt := range tests {
		if got := mayWrite(tt.uid, tt.name); got != tt.want {
			t.Errorf("mayWrite(%d, %q) = %v", tt.uid, tt.name, got)
		}
	}
}

func TestPersistence(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "property", "persistent_properties")
	var changed []string
	s := NewStore(file, func(n, v string) { changed = append(changed, n+"="+v) })
	for _, kv := range [][2]string{{"persist.a", "1"}, {"debug.b", "2"}, {"persist.c", "3"}} {
		if err := s.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	s.Delete("persist.c")
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "persist.a=1\n" {
		t.Fatalf("persist file %q %v", b, err)
	}
	if len(changed) != 3 {
		t.Errorf("onChange calls %v", changed)
	}
	s2 := NewStore(file, nil)
	if err := s2.LoadPersistent(); err != nil {
		t.Fatal(err)
	}
	if got := s2.All(); len(got) != 1 || got[0] != [2]string{"persist.a", "1"} {
		t.Errorf("reloaded %v", got)
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	s := NewStore("", nil)
	got := make(chan string, 1)
	old := "0"
	s.Set("sys.boot_completed", "0")
	go func() {
		v, _ := s.Wait(context.Background(), "sys.boot_completed", &old)
		got <- v
	}()
	s.Set("debug.other", "x")
	s.Set("sys.boot_completed", "1")
	select {
	case v := <-got:
		if v != "1" {
			t.Errorf("Wait returned %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the change")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx, "never.set", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait for a missing property: %v", err)
	}
}
