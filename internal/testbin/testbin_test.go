package testbin

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a child that builds hello, stages
// itself and prints both paths; "leak" skips the clean-up, as a test
// binary that dies would.
const helperEnv = "TESTBIN_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(Main(m))
}

func helper(mode string) int {
	bin, err := Build(context.Background(), "./testdata/hello")
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	self, err := Self()
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	os.Stdout.WriteString(bin + "\n" + self + "\n")
	if mode != "leak" {
		Cleanup()
	}
	return 0
}

func runHelper(t *testing.T, mode string) (bin, self string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("helper printed %q", out)
	}
	return lines[0], lines[1]
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// Another uid can run what Build and Self return.
func runAs(t *testing.T, uid int, path string, args ...string) string {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as uid %d: %v %s", path, uid, err, out)
	}
	return string(out)
}

func TestBuild(t *testing.T) {
	bin, err := Build(context.Background(), "./testdata/hello")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(bin) != "hello" {
		t.Errorf("binary named %s", bin)
	}
	for _, p := range []string{bin, filepath.Dir(bin), filepath.Dir(filepath.Dir(bin))} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v (%v), want 0755", p, fi.Mode(), err)
		}
	}
	// Asked again, in parallel: the same binary, built once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if again := Path(t, "./testdata/hello"); again != bin {
				t.Errorf("second Build = %s, want %s", again, bin)
			}
		})
	}
	wg.Wait()
	// Another spelling of the same package is the same entry.
	if abs := Path(t, "github.com/agentoslab/agentlab/internal/testbin/testdata/hello"); filepath.Base(abs) != "hello" {
		t.Errorf("by import path: %s", abs)
	}
	// Other flags are another binary.
	other := Path(t, "./testdata/hello", "-ldflags=-X main.greeting=bonjour")
	if other == bin {
		t.Fatal("different flags gave the same binary")
	}
	if out, _ := exec.Command(other).Output(); !strings.HasSuffix(strings.TrimSpace(string(out)), "bonjour") {
		t.Errorf("built with -X: %q", out)
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run the binary under another uid")
	}
	if out := runAs(t, 10123, bin); strings.TrimSpace(out) != "10123 hello" {
		t.Errorf("as uid 10123: %q", out)
	}
}

func TestBuildFailure(t *testing.T) {
	t.Parallel()
	_, err := Build(context.Background(), "./testdata/none")
	if err == nil || !strings.Contains(err.Error(), "go build") {
		t.Fatalf("err = %v", err)
	}
	// The failure is kept: asking again does not build again.
	if _, again := Build(context.Background(), "./testdata/none"); again != err {
		t.Errorf("second err = %v", again)
	}
}

// A second test binary reuses the first one's build (go build finds the
// cached binary up to date and does not relink it), runs a link of its
// own, and removes it when it ends.
func TestSharedBetweenTestBinaries(t *testing.T) {
	bin := Path(t, "./testdata/hello")
	cached := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(bin))), "cache", filepath.Base(filepath.Dir(bin)), "hello")
	before := inode(t, cached)
	if inode(t, bin) != before {
		t.Errorf("%s is not a link to %s", bin, cached)
	}
	childBin, childSelf := runHelper(t, "clean")
	if childBin == bin || filepath.Base(childBin) != "hello" {
		t.Errorf("child's binary %s (ours %s)", childBin, bin)
	}
	if after := inode(t, cached); after != before {
		t.Error("the child relinked a binary that was up to date")
	}
	for _, p := range []string{childBin, childSelf} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after the child's clean-up: %v", p, err)
		}
	}
}

// The run directory of a test binary that ended without its clean-up
// is removed by the next one.
func TestReapsDeadTestBinaries(t *testing.T) {
	_, self := runHelper(t, "leak")
	run := filepath.Dir(filepath.Dir(self))
	if _, err := os.Stat(run); err != nil {
		t.Fatalf("leaked run dir: %v", err)
	}
	reap(filepath.Dir(run))
	if _, err := os.Stat(run); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s not reaped: %v", run, err)
	}
	ours, err := runDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ours); err != nil {
		t.Errorf("reap removed a live test binary's dir: %v", err)
	}
}

func TestSelf(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Self(); again != self {
		t.Errorf("Self twice: %s, %s", self, again)
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run the copy under another uid")
	}
	runAs(t, 10124, self, "-test.run=^$")
}

func TestLockWaitsAndGivesUp(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	if _, err := lock(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := lock(context.Background(), path)
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting lock was not granted after unlock")
	}
}

func TestCacheKey(t *testing.T) {
	base := cacheKey("/m", "/m/cmd/x", nil)
	tests := []struct {
		name string
		key  func() string
		same bool
	}{
		{"same inputs", func() string { return cacheKey("/m", "/m/cmd/x", nil) }, true},
		{"other checkout", func() string { return cacheKey("/n", "/m/cmd/x", nil) }, false},
		{"other package", func() string { return cacheKey("/m", "/m/cmd/y", nil) }, false},
		{"flags", func() string { return cacheKey("/m", "/m/cmd/x", []string{"-tags", "t"}) }, false},
		{"flag boundaries", func() string { return cacheKey("/m", "/m/cmd/x", []string{"-tags t"}) }, false},
		{"environment", func() string {
			t.Setenv("CGO_ENABLED", "0")
			return cacheKey("/m", "/m/cmd/x", nil)
		}, false},
	}
	for _, tt := range tests {
		if got := tt.key(); (got == base) != tt.same {
			t.Errorf("%s: key %s vs %s, want same=%v", tt.name, got, base, tt.same)
		}
	}
}
