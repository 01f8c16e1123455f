//go:build linux

package modules

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func makeZip(t *testing.T, files map[string]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range files {
		w, _ := zw.Create(name)
		w.Write([]byte(body))
	}
	zw.Close()
	f.Close()
	return p
}

func newManager(t *testing.T) *Manager {
	r := proc.NewReaper(false)
	t.Cleanup(r.Close)
	return &Manager{Base: t.TempDir(), Method: Magisk, Reaper: r, Shell: []string{"/bin/sh"},
		Env: []string{"PATH=/usr/bin:/bin"}, API: 35, ABI: "x86_64", Log: slog.New(slog.DiscardHandler)}
}

func TestInstallActivateScripts(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	marker := filepath.Join(t.TempDir(), "marker")
	zipPath := makeZip(t, map[string]string{
		"module.prop":     "id=demo\nname=Demo\nversionCode=3\n",
		"customize.sh":    "ui_print \"api=$API arch=$ARCH boot=$BOOTMODE\"\n",
		"service.sh":      "echo \"service $MODDIR\" >> " + marker + "\n",
		"post-fs-data.sh": "echo \"pfd ${0%/*}\" >> " + marker + "\n",
		"sub/file.txt":    "x",
		"../escape":       "no",
		"META-INF/com/google/android/updater-script": "#MAGISK",
	})
	var out bytes.Buffer
	if err := m.Install(context.Background(), zipPath, &out); err != nil {
		t.Fatalf("Install: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "api=35 arch=x64 boot=true") {
		t.Errorf("customize.sh output: %q", out.String())
	}
	staged := filepath.Join(m.Base, "modules_update", "demo")
	for _, want := range []string{"module.prop", "service.sh", "sub/file.txt"} {
		if !exists(filepath.Join(staged, want)) {
			t.Errorf("staged module lacks %s", want)
		}
	}
	for _, unwanted := range []string{"customize.sh", "META-INF"} {
		if exists(filepath.Join(staged, unwanted)) {
			t.Errorf("staged module has %s", unwanted)
		}
	}
	if exists(filepath.Join(m.Base, "escape")) || exists(filepath.Join(m.Base, "modules_update", "escape")) {
		t.Error("zip entry escaped the module folder")
	}
	list := m.List()
	if len(list) != 1 || !list[0].Update {
		t.Fatalf("before boot: %+v", list)
	}
	if len(m.stageScripts("service")) != 0 {
		t.Errorf("scripts before activation should be the placeholder's (none with a script): %d", len(m.stageScripts("service")))
	}

	m.Activate(context.Background())
	list = m.List()
	if len(list) != 1 || list[0].Update || exists(staged) {
		t.Fatalf("after activation: %+v (staged left: %v)", list, exists(staged))
	}
	m.PostFsData(context.Background(), 10*time.Second)
	m.StartStage("service")
	want := "pfd " + filepath.Join(m.Base, "modules", "demo") + "\nservice " + filepath.Join(m.Base, "modules", "demo") + "\n"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		b, _ := os.ReadFile(marker)
		assert.Equal(c, want, string(b), "marker")
	}, 10*time.Second, 10*time.Millisecond)

	if err := m.SetFlag("demo", "disable", true); err != nil {
		t.Fatal(err)
	}
	if len(m.Active()) != 0 {
		t.Error("disabled module is active")
	}
	if err := m.SetFlag("demo", "remove", true); err != nil {
		t.Fatal(err)
	}
	m.Activate(context.Background())
	if len(m.List()) != 0 {
		t.Error("module flagged remove survived a boot")
	}
}

func TestInstallRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"no module.prop", map[string]string{"service.sh": "true"}},
		{"bad id", map[string]string{"module.prop": "id=../x\n"}},
		{"customize aborts", map[string]string{"module.prop": "id=abc\n", "customize.sh": "abort \"! nope\"\n"}},
	}
	for _, tt := range tests {
		m := newManager(t)
		err := m.Install(context.Background(), makeZip(t, tt.files), &bytes.Buffer{})
		if err == nil {
			t.Errorf("%s: installed", tt.name)
		}
		if tt.name != "customize aborts" && !errors.Is(err, ErrNotModule) {
			t.Errorf("%s: %v, want ErrNotModule", tt.name, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(m.Base, "modules_update")); len(entries) != 0 {
			t.Errorf("%s: left %d staged entries", tt.name, len(entries))
		}
	}
}

func TestPostFsDataTimeout(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	dir := filepath.Join(m.Base, "modules", "slow")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "module.prop"), []byte("id=slow\n"), 0o644)
	// Left running past the stage's timeout; it ends on its own before
	// the reaper is closed.
	os.WriteFile(filepath.Join(dir, "post-fs-data.sh"), []byte("exec sleep 1\n"), 0o644)
	start := time.Now()
	m.PostFsData(context.Background(), 50*time.Millisecond)
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("blocking stage took %s, past its 50ms timeout", d)
	}
}
