// Package testbin gives tests the module's commands as built binaries,
// and copies of the running test binary, that every uid can run: tests
// start them as app uids, the shell uid or the runtime's uid, and go
// test's own directories are open to their owner only.
//
// A test binary builds each package (with its flags) once. Test binaries
// running at the same time, or one after the other, share a cache per
// user under os.TempDir(), one entry per package and flags, where a file
// lock lets one build at a time and go build relinks only when the
// sources changed. Each test binary runs hard links (or copies) of its
// own, so a rebuild by another test binary never swaps a binary under a
// running test.
//
// TestMain ends with os.Exit(testbin.Main(m)), which removes this test
// binary's links and copies; those of a test binary that died are
// removed by the next one.
package testbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockPoll is how often a build waits for another test binary's build
// of the same entry to finish: flock cannot wait on a context.
const lockPoll = 50 * time.Millisecond

// buildEnv are the variables that change what go build makes; an entry
// is kept per combination, so test binaries with different settings do
// not relink each other's binaries in turn.
var buildEnv = []string{"GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOEXPERIMENT", "GOAMD64", "GOARM64"}

var state struct {
	mu     sync.Mutex
	runDir string            // this test binary's links and copies
	built  map[string]*entry // by cache key
	self   *entry
}

type entry struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of pkg's binary built with flags (go build
// flags such as "-tags", "x"), building it the first time this test
// binary asks. pkg is an import path, or a directory relative to the
// working directory ("." or "./cmd/x"). The binary is named after pkg's
// last element, has mode 0755 and lies in a directory every uid can
// enter; it stays until Main returns.
func Build(ctx context.Context, pkg string, flags ...string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	if strings.HasPrefix(pkg, ".") {
		if pkg, err = filepath.Abs(pkg); err != nil {
			return "", fmt.Errorf("testbin: %w", err)
		}
	}
	key := cacheKey(root, pkg, flags)
	state.mu.Lock()
	if state.built == nil {
		state.built = map[string]*entry{}
	}
	e := state.built[key]
	if e == nil {
		e = &entry{}
		state.built[key] = e
	}
	state.mu.Unlock()
	e.once.Do(func() { e.path, e.err = build(ctx, root, key, pkg, flags) })
	return e.path, e.err
}

// Path is Build for a test or benchmark: a failure ends it.
func Path(tb testing.TB, pkg string, flags ...string) string {
	tb.Helper()
	p, err := Build(context.Background(), pkg, flags...)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Self returns a copy of the running test binary that every uid can run,
// made the first time it is asked for.
func Self() (string, error) {
	state.mu.Lock()
	if state.self == nil {
		state.self = &entry{}
	}
	e := state.self
	state.mu.Unlock()
	e.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			e.err = fmt.Errorf("testbin: %w", err)
			return
		}
		e.path, e.err = stage(exe, "self")
	})
	return e.path, e.err
}

// Main runs the tests and then removes this test binary's links and
// copies. It returns m.Run's exit code.
func Main(m *testing.M) int {
	code := m.Run()
	Cleanup()
	return code
}

// Cleanup removes this test binary's links and copies; Main calls it.
// Binaries asked for later are made again.
func Cleanup() {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.runDir != "" {
		os.RemoveAll(state.runDir)
	}
	state.runDir, state.built, state.self = "", nil, nil
}

func build(ctx context.Context, root, key, pkg string, flags []string) (string, error) {
	top, err := userDir()
	if err != nil {
		return "", err
	}
	cacheDir := filepath.Join(top, "cache", key)
	if err := mkdirOpen(cacheDir); err != nil {
		return "", err
	}
	unlock, err := lock(ctx, cacheDir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	out := filepath.Join(cacheDir, filepath.Base(pkg))
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go build %s: %w\n%s", pkg, err, b)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	// Linked while the lock is held: no other build replaces it meanwhile.
	return stage(out, key)
}

// stage puts a link to (or a copy of) src in this test binary's run
// directory, under sub, with mode 0755.
func stage(src, sub string) (string, error) {
	run, err := runDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(run, sub)
	if err := mkdirOpen(dir); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.Link(src, dst); err != nil {
		if err := Copy(dst, src); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	return dst, nil
}

// Copy copies the executable src to dst with mode 0755.
func Copy(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("testbin: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("testbin: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("testbin: copy %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("testbin: %w", err)
	}
	return nil
}

// runDir returns this test binary's directory, made on first use after
// removing those of test binaries that are gone.
func runDir() (string, error) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.runDir != "" {
		return state.runDir, nil
	}
	top, err := userDir()
	if err != nil {
		return "", err
	}
	reap(top)
	dir, err := os.MkdirTemp(top, "run-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	state.runDir = dir
	return dir, nil
}

// reap removes the run directories of processes that no longer exist.
func reap(top string) {
	ents, err := os.ReadDir(top)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "run-")
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(filepath.Join(top, e.Name()))
		}
	}
}

// userDir is this user's directory under os.TempDir(): made open (0755)
// so other uids reach the binaries, and refused when another user made
// it or it is not a plain directory.
func userDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "agentlab-testbin-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("testbin: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() {
		return "", fmt.Errorf("testbin: %s is not a directory of this user", dir)
	}
	if fi.Mode().Perm() != 0o755 {
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", fmt.Errorf("testbin: %w", err)
		}
	}
	return dir, nil
}

func mkdirOpen(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testbin: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("testbin: %w", err)
	}
	return nil
}

// lock takes the file lock at path, waiting until ctx ends.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testbin: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("testbin: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("testbin: lock %s: %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// cacheKey names a cache entry: the module checkout, the package, the
// flags and the build settings from the environment.
func cacheKey(root, pkg string, flags []string) string {
	h := sha256.New()
	for _, s := range append([]string{root, pkg}, flags...) {
		io.WriteString(h, s)
		h.Write([]byte{0})
	}
	for _, k := range buildEnv {
		io.WriteString(h, k+"="+os.Getenv(k))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// moduleRoot finds the directory of the go.mod above the working
// directory (a test's working directory is its package's).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
