//go:build agentos_noplatform

package platform

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Built without the layer, an Android system is treated as plain Linux:
// the build the lab uses to show what fails without the layer.
func TestNoPlatformBuildDetectsNothing(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{buildProp, getpropPath} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), nil, 0o644)
	}
	before := time.Local
	env := map[string]string{"ANDROID_ROOT": "/system"}
	sys := &system{root: root, getenv: func(k string) string { return env[k] },
		setenv: func(k, v string) error { env[k] = v; return nil }, getprop: func(string) string { return "Asia/Shanghai" }}
	p := detect(&Options{sys: sys})
	if p.Android() || p.resolver != nil || time.Local != before || len(env) != 1 {
		t.Fatalf("the agentos_noplatform build changed something: %+v", p.Info())
	}
}
