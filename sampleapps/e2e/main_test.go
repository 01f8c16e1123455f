package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/internal/appbundle"
)

// Built once per test binary, in a directory every uid can read.
var (
	buildDir string
	bundles  *appbundle.Set
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sampleapps-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The runtime's and the apps' uids run binaries from here.
	os.Chmod(dir, 0o755)
	buildDir = dir
	bundles, err = appbundle.New(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// appBinary returns a sample app's binary, built on first use.
func appBinary(t *testing.T, app string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin, err := bundles.Binary(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildApps builds the named apps' binaries in one go build.
func buildApps(t *testing.T, apps ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := bundles.Build(ctx, apps...); err != nil {
		t.Fatal(err)
	}
}

// runJSON runs a command and returns its stdout, failing the test on a
// non-zero exit.
func runJSON(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", filepath.Base(name), args, err, out, stderr)
	}
	return out
}
