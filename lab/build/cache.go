package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// listedPackage is what `go list -deps -json` says about one package.
type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	CgoFiles   []string
	SFiles     []string
	SysoFiles  []string
	EmbedFiles []string
	Deps       []string
	Module     *struct {
		Path    string
		Version string
		Main    bool
		Replace *struct {
			Path    string
			Version string
		}
	}
	Error *struct{ Err string }
}

// goCommand is the go command with args in root, for goarch. Its whole
// process group is killed when ctx ends, so that no compiler it started
// outlives a cancelled build.
func goCommand(ctx context.Context, goCmd, root, goarch string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = root
	if goarch != "" {
		cmd.Env = goEnv(goarch)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// goEnv is the environment of a cross-build for goarch.
func goEnv(goarch string) []string {
	env := os.Environ()
	return append(env, "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
}

// goList lists pkgs and everything they import, for goarch, with the
// given flags (build tags).
func goList(ctx context.Context, goCmd, root, goarch string, flags, pkgs []string) (map[string]*listedPackage, error) {
	args := append(append([]string{"list"}, flags...), "-deps", "-json=ImportPath,Dir,Standard,GoFiles,CgoFiles,SFiles,SysoFiles,EmbedFiles,Deps,Module,Error")
	args = append(args, pkgs...)
	cmd := goCommand(ctx, goCmd, root, goarch, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list for %s: %w: %s", goarch, err, firstLines(stderr.String(), 5))
	}
	all := map[string]*listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list for %s: %w", goarch, err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list for %s: %s: %s", goarch, p.ImportPath, p.Error.Err)
		}
		all[p.ImportPath] = &p
	}
	return all, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// hasher hashes source files once per build, by path.
type hasher struct {
	mu    sync.Mutex
	files map[string]string
}

func (h *hasher) file(path string) (string, error) {
	h.mu.Lock()
	sum, ok := h.files[path]
	h.mu.Unlock()
	if ok {
		return sum, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return "", err
	}
	sum = hex.EncodeToString(d.Sum(nil))
	h.mu.Lock()
	if h.files == nil {
		h.files = map[string]string{}
	}
	h.files[path] = sum
	h.mu.Unlock()
	return sum, nil
}

// binaryKey is the content address of one main package's binary: the Go
// version, the build settings, and for every package it links either the
// module version (an immutable module from the module cache) or the
// content of each of its source and embedded files (the main module and
// local replacements). Standard-library packages are covered by the Go
// version.
func binaryKey(h *hasher, all map[string]*listedPackage, main string, settings []string) (string, error) {
	d := sha256.New()
	for _, s := range settings {
		fmt.Fprintf(d, "setting %s\n", s)
	}
	p, ok := all[main]
	if !ok {
		return "", fmt.Errorf("go list did not list %s", main)
	}
	names := append([]string{main}, p.Deps...)
	sort.Strings(names)
	for _, name := range names {
		dep, ok := all[name]
		if !ok {
			return "", fmt.Errorf("go list did not list %s (imported by %s)", name, main)
		}
		if dep.Standard {
			continue
		}
		if m := dep.Module; m != nil && !m.Main && m.Version != "" && (m.Replace == nil || m.Replace.Version != "") {
			v := m.Path + "@" + m.Version
			if m.Replace != nil {
				v += "=>" + m.Replace.Path + "@" + m.Replace.Version
			}
			fmt.Fprintf(d, "pkg %s %s\n", name, v)
			continue
		}
		fmt.Fprintf(d, "pkg %s\n", name)
		var files []string
		for _, set := range [][]string{dep.GoFiles, dep.CgoFiles, dep.SFiles, dep.SysoFiles, dep.EmbedFiles} {
			files = append(files, set...)
		}
		sort.Strings(files)
		for _, f := range files {
			sum, err := h.file(filepath.Join(dep.Dir, f))
			if err != nil {
				return "", fmt.Errorf("hash %s: %w", name, err)
			}
			fmt.Fprintf(d, "file %s %s\n", f, sum)
		}
	}
	return hex.EncodeToString(d.Sum(nil)), nil
}

// treeKey hashes the regular files under dir (names and contents).
func treeKey(h *hasher, dir string) (string, error) {
	d := sha256.New()
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		sum, err := h.file(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(d, "%s %s\n", filepath.ToSlash(rel), sum)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return hex.EncodeToString(d.Sum(nil)), nil
}

func keyOf(parts ...string) string {
	d := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(d, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(d.Sum(nil))
}

// place makes dst the file src (a hard link when possible, else a
// copy), unless it already is.
func place(src, dst string) error {
	if si, err := os.Stat(src); err != nil {
		return err
	} else if di, err := os.Stat(dst); err == nil && os.SameFile(si, di) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeAtomic writes data to path through a temporary file.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
