//go:build linux

package modules

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
)

// Root methods that have modules.
const (
	Magisk   = "magisk"
	KernelSU = "kernelsu"
)

// Versions the device reports (magisk -v/-V/-c, su -v/-V, ksud -V).
const (
	MagiskVersion     = "27.0"
	MagiskVersionCode = 27000
	KSUVersion        = "1.0.5"
	KSUVersionCode    = 12081
)

// Zip limits: a module zip is bounded in entries and unpacked size.
const (
	maxEntries   = 10000
	maxUnpacked  = 1 << 30
	maxPropBytes = 64 << 10
)

var idRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9._-]+$`)

// ErrNotModule is wrapped when a zip has no valid module.prop.
var ErrNotModule = errors.New("not a module")

// Manager handles the modules under Base (/data/adb inside a device).
type Manager struct {
	Base   string // /data/adb
	Method string // Magisk or KernelSU
	// Reaper starts scripts.
	Reaper *proc.Reaper
	// Shell is the sh scripts run in: BusyBox's when the device has it.
	Shell []string
	// Env is the base environment of scripts.
	Env []string
	// API and ABI fill customize.sh's variables.
	API int
	ABI string
	Log *slog.Logger
	// ScriptLog receives the output of boot scripts (nil: discarded).
	ScriptLog *os.File
}

func (m *Manager) modulesDir() string { return filepath.Join(m.Base, "modules") }
func (m *Manager) updateDir() string  { return filepath.Join(m.Base, "modules_update") }

// Prop reads a module.prop.
func Prop(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPropBytes))
	if err != nil {
		return nil, err
	}
	return parseProp(b), nil
}

func parseProp(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			out[strings.TrimSpace(k)] = v
		}
	}
	return out
}

// Install stages the module zip at zipPath into modules_update/<id> and
// flags it for the next boot, printing the installer's lines to out.
func (m *Manager) Install(ctx context.Context, zipPath string, out io.Writer) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	defer zr.Close()
	if len(zr.File) > maxEntries {
		return fmt.Errorf("install module: %d entries: too many", len(zr.File))
	}
	var propFile *zip.File
	for _, f := range zr.File {
		if f.Name == "module.prop" {
			propFile = f
		}
	}
	if propFile == nil {
		return fmt.Errorf("install module: no module.prop: %w", ErrNotModule)
	}
	pb, err := readZipFile(propFile, maxPropBytes)
	if err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	prop := parseProp(pb)
	id := prop["id"]
	if !idRE.MatchString(id) {
		return fmt.Errorf("install module: invalid id %q: %w", id, ErrNotModule)
	}
	fmt.Fprintln(out, "*******************************")
	fmt.Fprintf(out, " %s\n", prop["name"])
	if a := prop["author"]; a != "" {
		fmt.Fprintf(out, " by %s\n", a)
	}
	fmt.Fprintln(out, "*******************************")
	if m.Method == KernelSU {
		fmt.Fprintf(out, " Powered by KernelSU\n")
	} else {
		fmt.Fprintf(out, " Powered by Magisk\n")
	}
	fmt.Fprintln(out, "*******************************")

	modPath := filepath.Join(m.updateDir(), id)
	if err := os.RemoveAll(modPath); err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	if err := os.MkdirAll(modPath, 0o755); err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	skipUnzip := false
	for _, f := range zr.File {
		if f.Name == "customize.sh" {
			b, err := readZipFile(f, maxPropBytes*16)
			if err == nil && regexp.MustCompile(`(?m)^SKIPUNZIP=1\s*$`).Match(b) {
				skipUnzip = true
			}
		}
	}
	if !skipUnzip {
		fmt.Fprintln(out, "- Extracting module files")
		if err := extract(zr, modPath); err != nil {
			os.RemoveAll(modPath)
			return fmt.Errorf("install module: %w", err)
		}
	} else {
		for _, name := range []string{"module.prop", "customize.sh"} {
			if err := extractOne(zr, name, modPath); err != nil {
				os.RemoveAll(modPath)
				return fmt.Errorf("install module: %w", err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(modPath, "customize.sh")); err == nil {
		if err := m.customize(ctx, zipPath, modPath, out); err != nil {
			os.RemoveAll(modPath)
			return fmt.Errorf("install module: %w", err)
		}
	}
	for _, junk := range []string{"customize.sh", "README.md", ".git"} {
		os.RemoveAll(filepath.Join(modPath, junk))
	}
	// The installed copy of the module shows the pending update; a
	// disable flag of an earlier version is kept.
	live := filepath.Join(m.modulesDir(), id)
	if err := os.MkdirAll(live, 0o755); err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	if _, err := os.Stat(filepath.Join(live, "disable")); err == nil {
		os.WriteFile(filepath.Join(modPath, "disable"), nil, 0o644)
	}
	if err := os.WriteFile(filepath.Join(live, "update"), nil, 0o644); err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	if err := copyFile(filepath.Join(modPath, "module.prop"), filepath.Join(live, "module.prop")); err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	fmt.Fprintln(out, "- Done")
	return nil
}

func readZipFile(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", f.Name, limit)
	}
	return b, nil
}

// safeName returns the path of a zip entry under dir, or "" for entries
// that must not be unpacked (absolute, escaping, META-INF).
func safeName(dir, name string) string {
	clean := path.Clean("/" + name)[1:]
	if clean == "" || clean != strings.TrimSuffix(name, "/") || strings.HasPrefix(clean, "META-INF/") || clean == "META-INF" {
		return ""
	}
	return filepath.Join(dir, filepath.FromSlash(clean))
}

func extract(zr *zip.ReadCloser, dir string) error {
	var total int64
	for _, f := range zr.File {
		dst := safeName(dir, f.Name)
		if dst == "" {
			continue
		}
		if strings.HasSuffix(f.Name, "/") {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		if !f.Mode().IsRegular() {
			continue
		}
		n, err := writeEntry(f, dst, maxUnpacked-total)
		if err != nil {
			return err
		}
		total += n
	}
	return nil
}

func extractOne(zr *zip.ReadCloser, name, dir string) error {
	for _, f := range zr.File {
		if f.Name == name {
			_, err := writeEntry(f, filepath.Join(dir, name), maxUnpacked)
			return err
		}
	}
	return nil
}

func writeEntry(f *zip.File, dst string, budget int64) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	rc, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(w, io.LimitReader(rc, budget+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > budget {
		err = fmt.Errorf("module unpacks to more than %d bytes", maxUnpacked)
	}
	return n, err
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// customizePrelude defines the installer functions customize.sh may call
// before it is sourced.
const customizePrelude = `ui_print() { echo "$1"; }
abort() { echo "$1"; exit 1; }
set_perm() { chown $2:$3 "$1" || return 1; chmod $4 "$1" || return 1; }
set_perm_recursive() {
  find "$1" -type d 2>/dev/null | while read -r d; do set_perm "$d" $2 $3 $4; done
  find "$1" -type f -o -type l 2>/dev/null | while read -r f; do set_perm "$f" $2 $3 $5; done
}
cd "$MODPATH" || exit 1
. "$MODPATH/customize.sh"
`

func (m *Manager) arch() (arch string, is64 bool) {
	switch m.ABI {
	case "arm64-v8a":
		return "arm64", true
	case "armeabi-v7a":
		return "arm", false
	case "x86":
		return "x86", false
	case "riscv64":
		return "riscv64", true
	}
	return "x64", true
}

// scriptEnv is the environment of installer and boot scripts.
func (m *Manager) scriptEnv(extra ...string) []string {
	env := append([]string{}, m.Env...)
	arch, is64 := m.arch()
	env = append(env, "BOOTMODE=true", "NVBASE="+m.Base, fmt.Sprintf("API=%d", m.API), "ARCH="+arch,
		fmt.Sprintf("IS64BIT=%t", is64))
	if m.Method == KernelSU {
		env = append(env, "KSU=true", "KSU_VER="+KSUVersion, fmt.Sprintf("KSU_VER_CODE=%d", KSUVersionCode),
			"KSU_RUNTIME_MODE=built-in", "MAGISK_VER=v25.2", "MAGISK_VER_CODE=25200")
	} else {
		env = append(env, "MAGISK_VER="+MagiskVersion, fmt.Sprintf("MAGISK_VER_CODE=%d", MagiskVersionCode))
	}
	return append(env, extra...)
}

func (m *Manager) customize(ctx context.Context, zipPath, modPath string, out io.Writer) error {
	tmp, err := os.MkdirTemp("", "module-install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := append(append([]string{}, m.Shell...), "-c", customizePrelude)
	code, err := m.run(ctx, args, m.scriptEnv("MODPATH="+modPath, "TMPDIR="+tmp, "ZIPFILE="+zipPath), out, 5*time.Minute)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("customize.sh failed (exit %d)", code)
	}
	return nil
}

// run runs a script and waits, killing it at the timeout.
func (m *Manager) run(ctx context.Context, args, env []string, out io.Writer, timeout time.Duration) (int, error) {
	p, done, err := m.start(args, env, "/", out)
	if err != nil {
		return -1, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	code, err := p.Wait(ctx)
	if err != nil {
		p.KillGroup(9)
		<-p.Done()
		return -1, fmt.Errorf("%s: timed out after %s", filepath.Base(args[len(args)-1]), timeout)
	}
	return code, nil
}

// start starts a script with its output to out; done releases the
// output pipe's copier once the script's output ends.
func (m *Manager) start(args, env []string, dir string, out io.Writer) (*proc.Process, func(), error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, nil, err
	}
	defer devnull.Close()
	var w *os.File
	wait := func() {}
	switch o := out.(type) {
	case *os.File:
		w = o
	case nil:
		w, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, nil, err
		}
		defer w.Close()
	default:
		r, pw, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			io.Copy(o, r)
			r.Close()
		}()
		defer pw.Close()
		w = pw
		wait = func() { <-copied }
	}
	p, err := m.Reaper.Start(&proc.Cmd{Path: args[0], Args: args, Env: env, Dir: dir,
		Files: []*os.File{devnull, w, w}, Setsid: true})
	if err != nil {
		return nil, nil, err
	}
	return p, wait, nil
}

// Info describes an installed module.
type Info struct {
	ID, Dir string
	Prop    map[string]string
	Disable bool
	Remove  bool
	Update  bool
}

// List returns the modules under modules/, sorted by id.
func (m *Manager) List() []Info {
	entries, _ := os.ReadDir(m.modulesDir())
	var out []Info
	for _, e := range entries {
		if !e.IsDir() || !idRE.MatchString(e.Name()) {
			continue
		}
		dir := filepath.Join(m.modulesDir(), e.Name())
		prop, err := Prop(filepath.Join(dir, "module.prop"))
		if err != nil {
			continue
		}
		out = append(out, Info{ID: e.Name(), Dir: dir, Prop: prop,
			Disable: exists(filepath.Join(dir, "disable")),
			Remove:  exists(filepath.Join(dir, "remove")),
			Update:  exists(filepath.Join(dir, "update"))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// SetFlag creates or removes a module's flag file (disable, remove).
func (m *Manager) SetFlag(id, flag string, on bool) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("module %q: invalid id", id)
	}
	dir := filepath.Join(m.modulesDir(), id)
	if !exists(filepath.Join(dir, "module.prop")) {
		return fmt.Errorf("module %s: not installed", id)
	}
	// A staged update gets the flag too: it replaces the installed copy
	// at the next boot.
	dirs := []string{dir}
	if staged := filepath.Join(m.updateDir(), id); exists(staged) {
		dirs = append(dirs, staged)
	}
	for _, d := range dirs {
		p := filepath.Join(d, flag)
		if on {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
		} else if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// RemoveAll uninstalls every module now (magisk --remove-modules).
func (m *Manager) RemoveAll(ctx context.Context) error {
	for _, mod := range m.List() {
		m.uninstall(ctx, mod)
	}
	if err := os.RemoveAll(m.updateDir()); err != nil {
		return err
	}
	return os.RemoveAll(m.modulesDir())
}

func (m *Manager) uninstall(ctx context.Context, mod Info) {
	if script := filepath.Join(mod.Dir, "uninstall.sh"); exists(script) {
		args := append(append([]string{}, m.Shell...), script)
		m.run(ctx, args, m.scriptEnv("MODDIR="+mod.Dir), m.scriptOut(), 30*time.Second)
	}
	os.RemoveAll(mod.Dir)
}

func (m *Manager) scriptOut() io.Writer {
	if m.ScriptLog == nil {
		return nil
	}
	return m.ScriptLog
}

// Activate runs at boot before any stage: staged updates replace the
// installed modules and modules flagged remove are uninstalled.
func (m *Manager) Activate(ctx context.Context) {
	os.MkdirAll(m.modulesDir(), 0o755)
	staged, _ := os.ReadDir(m.updateDir())
	for _, e := range staged {
		src := filepath.Join(m.updateDir(), e.Name())
		if !e.IsDir() || !idRE.MatchString(e.Name()) {
			os.RemoveAll(src)
			continue
		}
		dst := filepath.Join(m.modulesDir(), e.Name())
		for _, flag := range []string{"disable", "remove"} {
			if exists(filepath.Join(dst, flag)) {
				os.WriteFile(filepath.Join(src, flag), nil, 0o644)
			}
		}
		os.RemoveAll(dst)
		if err := os.Rename(src, dst); err != nil {
			m.Log.Warn("module update failed", "module", e.Name(), "err", err)
		}
	}
	for _, mod := range m.List() {
		if mod.Remove {
			m.uninstall(ctx, mod)
			continue
		}
		if mod.Update {
			// A flag left by an install whose staging vanished.
			os.Remove(filepath.Join(mod.Dir, "update"))
		}
	}
}

// Active returns the modules that run: not disabled, not being removed.
func (m *Manager) Active() []Info {
	var out []Info
	for _, mod := range m.List() {
		if !mod.Disable && !mod.Remove {
			out = append(out, mod)
		}
	}
	return out
}

// PostFsData runs the blocking stage: general scripts in post-fs-data.d,
// then each active module's post-fs-data.sh, all within timeout (Magisk
// 40 s, KernelSU 10 s); a script still running then is left to finish.
func (m *Manager) PostFsData(ctx context.Context, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, s := range m.stageScripts("post-fs-data") {
		left := time.Until(deadline)
		if left <= 0 {
			m.Log.Warn("post-fs-data timed out")
			return
		}
		p, done, err := m.start(s.args, s.env, "/", m.scriptOut())
		if err != nil {
			m.Log.Warn("post-fs-data script failed to start", "script", s.name, "err", err)
			continue
		}
		t := time.NewTimer(left)
		select {
		case <-p.Done():
			done()
		case <-t.C:
			m.Log.Warn("post-fs-data timed out", "script", s.name)
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// StartStage starts every script of a non-blocking stage ("service",
// "boot-completed") and returns without waiting for them.
func (m *Manager) StartStage(stage string) {
	for _, s := range m.stageScripts(stage) {
		if _, _, err := m.start(s.args, s.env, "/", m.scriptOut()); err != nil {
			m.Log.Warn("boot script failed to start", "script", s.name, "err", err)
		}
	}
}

type script struct {
	name string
	args []string
	env  []string
}

// stageScripts lists a stage's scripts: executable files in
// <base>/<stage>.d, then <stage>.sh of each active module.
func (m *Manager) stageScripts(stage string) []script {
	var out []script
	dir := filepath.Join(m.Base, stage+".d")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			out = append(out, script{name: p, args: append(append([]string{}, m.Shell...), p), env: m.scriptEnv()})
		}
	}
	for _, mod := range m.Active() {
		p := filepath.Join(mod.Dir, stage+".sh")
		if exists(p) {
			out = append(out, script{name: mod.ID + "/" + stage + ".sh",
				args: append(append([]string{}, m.Shell...), p), env: m.scriptEnv("MODDIR=" + mod.Dir)})
		}
	}
	return out
}

// SystemProps returns the system.prop files of the active modules.
func (m *Manager) SystemProps() []string {
	var out []string
	for _, mod := range m.Active() {
		if p := filepath.Join(mod.Dir, "system.prop"); exists(p) {
			out = append(out, p)
		}
	}
	return out
}
