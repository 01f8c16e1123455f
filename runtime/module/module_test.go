package module

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeELF writes a minimal 64-bit little-endian ELF header for machine.
func fakeELF(t *testing.T, machine uint16) string {
	t.Helper()
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1               // 64-bit, little endian, version 1
	binary.LittleEndian.PutUint16(h[16:], 2) // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], machine)
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64) // header size
	p := filepath.Join(t.TempDir(), "agentosd")
	if err := os.WriteFile(p, h, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const emAArch64, emX8664 = 183, 62

func baseOptions(t *testing.T) Options {
	return Options{ABI: ABIArm64, Version: "0.3.0", VersionCode: 3, AgentosdPath: fakeELF(t, emAArch64)}
}

func pack(t *testing.T, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Pack(context.Background(), o, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func entries(t *testing.T, b []byte) (map[string][]byte, map[string]os.FileMode, []string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	data, modes := map[string][]byte{}, map[string]os.FileMode{}
	var names []string
	for _, f := range zr.File {
		rc, _ := f.Open()
		c, _ := io.ReadAll(rc)
		rc.Close()
		data[f.Name], modes[f.Name] = c, f.Mode()
		names = append(names, f.Name)
	}
	return data, modes, names
}

func TestPackIsReproducible(t *testing.T) {
	t.Parallel()
	o := baseOptions(t)
	a, b := pack(t, o), pack(t, o)
	if !bytes.Equal(a, b) {
		t.Fatal("two packs of the same input differ")
	}
	o.VersionCode = 4
	if bytes.Equal(a, pack(t, o)) {
		t.Fatal("another versionCode gave the same zip")
	}
}

func TestContents(t *testing.T) {
	t.Parallel()
	o := baseOptions(t)
	data, modes, names := entries(t, pack(t, o))
	want := []string{"META-INF/com/google/android/update-binary", "META-INF/com/google/android/updater-script",
		"action.sh", "bin/agentosd", "customize.sh", "module.prop", "service.sh", "support-matrix.yaml", "uninstall.sh"}
	if !slices.Equal(names, want) {
		t.Fatalf("entries %v", names)
	}
	wantModes := map[string]os.FileMode{"bin/agentosd": 0o755, "service.sh": 0o755, "uninstall.sh": 0o755, "action.sh": 0o755,
		"META-INF/com/google/android/update-binary": 0o755, "customize.sh": 0o644, "module.prop": 0o644,
		"META-INF/com/google/android/updater-script": 0o644, "support-matrix.yaml": 0o644}
	for n, m := range wantModes {
		if modes[n] != m {
			t.Errorf("%s mode %v, want %v", n, modes[n], m)
		}
	}
	if string(data["META-INF/com/google/android/updater-script"]) != "#MAGISK\n" {
		t.Errorf("updater-script %q", data["META-INF/com/google/android/updater-script"])
	}
	bin, _ := os.ReadFile(o.AgentosdPath)
	if !bytes.Equal(data["bin/agentosd"], bin) {
		t.Error("binary differs")
	}
	for _, n := range []string{"module.prop", "customize.sh", "service.sh", "uninstall.sh", "action.sh", "support-matrix.yaml"} {
		golden := filepath.Join("testdata", n+".golden")
		if *update {
			os.MkdirAll("testdata", 0o755)
			os.WriteFile(golden, data[n], 0o644)
			continue
		}
		g, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(g, data[n]) {
			t.Errorf("%s differs from %s:\n%s", n, golden, data[n])
		}
	}
	// customize.sh is sourced by the installer: it must never exit.
	if regexp.MustCompile(`(?m)^[^#]*\bexit\b`).Match(data["customize.sh"]) {
		t.Error("customize.sh calls exit")
	}
	prop := string(data["module.prop"])
	for _, l := range []string{"id=agentos\n", "version=0.3.0\n", "versionCode=3\n", "name=AgentOS\n", "author=AgentOS Lab\n"} {
		if !strings.Contains(prop, l) {
			t.Errorf("module.prop lacks %q", l)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	t.Parallel()
	arm := fakeELF(t, emAArch64)
	x86 := fakeELF(t, emX8664)
	notELF := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"abi", Options{ABI: "mips", Version: "1", VersionCode: 1, AgentosdPath: arm}, "ABI"},
		{"version", Options{ABI: ABIArm64, Version: "1 2", VersionCode: 1, AgentosdPath: arm}, "version"},
		{"versionCode", Options{ABI: ABIArm64, Version: "1", AgentosdPath: arm}, "versionCode"},
		{"no binary", Options{ABI: ABIArm64, Version: "1", VersionCode: 1}, "binary is required"},
		{"binary for another ABI", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: x86}, "not arm64-v8a"},
		{"not ELF", Options{ABI: ABIX8664, Version: "1", VersionCode: 1, AgentosdPath: notELF}, "not an ELF"},
		{"api range", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: arm, MinAPI: 36, MaxAPI: 35}, "API range"},
		{"root", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: arm, Root: "/data/x y"}, "root"},
		{"name newline", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: arm, Name: "A\nid=evil"}, "name"},
		{"fingerprint with a space", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: arm, VerifiedFingerprints: []string{"a b"}}, "verified fingerprint"},
		{"fingerprint with a newline", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: arm, VerifiedFingerprints: []string{"a\nschema: 2"}}, "verified fingerprint"},
		{"conflicting with itself", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: arm, ConflictingModules: []string{"agentos"}}, "conflicting module"},
		{"matrix version", Options{ABI: ABIArm64, Version: "1", VersionCode: 1, AgentosdPath: arm, MatrixVersion: "a b"}, "matrix version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Pack(context.Background(), tt.o, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// shells are the shells the scripts are tested with: the host's sh and,
// when installed, BusyBox ash (what Magisk and KernelSU run them with).
func shells(t *testing.T) [][]string {
	out := [][]string{{"sh"}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		out = append(out, []string{bb, "ash"})
	} else {
		t.Log("busybox not installed: scripts tested with sh only")
	}
	return out
}

// harness sources customize.sh the way the installers do, with fake
// ui_print, abort, set_perm and set_perm_recursive, and fake getprop and
// df as shell functions (BusyBox ash prefers its own applets to PATH).
const harness = `getprop() { "$FAKEBIN/getprop" "$@"; }
df() { "$FAKEBIN/df" "$@"; }
ui_print() { echo "ui: $1"; }
abort() { echo "abort: $1"; exit 1; }
set_perm() { echo "set_perm $*"; }
set_perm_recursive() { echo "set_perm_recursive $*"; }
. "$SCRIPT"
echo "sourced to the end"
`

const fakeGetprop = `#!/bin/sh
case "$1" in
  ro.build.version.sdk) echo "$FAKE_SDK" ;;
  ro.build.fingerprint) echo "google/husky/husky:15/AP4A.250105.002/12345:user/release-keys" ;;
esac
`

const fakeDf = `#!/bin/sh
[ -n "$FAKE_DF_FAIL" ] && exit 1
echo "Filesystem     1024-blocks    Used Available Capacity Mounted on"
echo "/dev/block/dm-48 115000000 2000000 $FAKE_FREE_KB 2% /data"
`

func TestCustomizeScript(t *testing.T) {
	t.Parallel()
	o := baseOptions(t)
	data, _, _ := entries(t, pack(t, o))
	o2 := o
	o2.MinAPI, o2.MaxAPI = 30, 34
	data2, _, _ := entries(t, pack(t, o2))

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "getprop"), []byte(fakeGetprop), 0o755)
	os.WriteFile(filepath.Join(bin, "df"), []byte(fakeDf), 0o755)
	scripts := map[string]string{"default": filepath.Join(dir, "customize.sh"), "api30-34": filepath.Join(dir, "customize2.sh")}
	os.WriteFile(scripts["default"], data["customize.sh"], 0o644)
	os.WriteFile(scripts["api30-34"], data2["customize.sh"], 0o644)
	o3 := o
	o3.VerifiedFingerprints = []string{"other/device:14/X/1:user/release-keys", "google/husky/husky:15/AP4A.250105.002/12345:user/release-keys"}
	o3.ConflictingModules, o3.KernelSUMin, o3.MatrixVersion = []string{"conflict.a", "conflict.b"}, 11000, "2027.01.01-2"
	data3, _, _ := entries(t, pack(t, o3))
	scripts["matrix"] = filepath.Join(dir, "customize3.sh")
	os.WriteFile(scripts["matrix"], data3["customize.sh"], 0o644)
	matrices := map[string][]byte{"default": data["support-matrix.yaml"], "api30-34": data2["support-matrix.yaml"], "matrix": data3["support-matrix.yaml"]}
	// Installed modules: conflict.b is flagged for removal, conflict.a is not.
	nv := filepath.Join(dir, "nvbase")
	noConflict := filepath.Join(dir, "nvbase-clean")
	os.MkdirAll(filepath.Join(nv, "modules", "conflict.a"), 0o755)
	os.MkdirAll(filepath.Join(nv, "modules", "conflict.b"), 0o755)
	os.WriteFile(filepath.Join(nv, "modules", "conflict.b", "remove"), nil, 0o644)
	os.MkdirAll(filepath.Join(noConflict, "modules", "conflict.b"), 0o755)
	os.WriteFile(filepath.Join(noConflict, "modules", "conflict.b", "remove"), nil, 0o644)
	os.MkdirAll(filepath.Join(noConflict, "modules", "other"), 0o755)
	os.WriteFile(filepath.Join(dir, "harness.sh"), []byte(harness), 0o644)

	magisk := map[string]string{"API": "35", "ARCH": "arm64", "MAGISK_VER_CODE": "27000", "FAKE_FREE_KB": "900000"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name   string
		script string
		env    map[string]string
		abort  string            // "" = passes
		prop   map[string]string // install.prop lines that must be present
		says   string            // output that must be there ("" = no requirement)
		silent string            // output that must not be there
	}{
		{"unverified device warns", "default", magisk, "", map[string]string{"fingerprint_verified": "0", "matrix_version": "2026.09.29-1"}, "Warning: unverified device (google/husky", ""},
		{"verified device", "matrix", with(magisk, "NVBASE", noConflict), "", map[string]string{"fingerprint_verified": "1", "matrix_version": "2027.01.01-2"}, "support matrix 2027.01.01-2", "unverified"},
		{"conflicting module", "matrix", with(magisk, "NVBASE", nv), "The module 'conflict.a' conflicts with AgentOS; remove it first", nil, "", ""},
		{"kernelsu too old", "matrix", with(magisk, "NVBASE", noConflict, "KSU", "true", "KSU_VER_CODE", "10999"), "KernelSU 10999 is too old; need 11000 or newer", nil, "", ""},
		{"kernelsu new enough", "matrix", with(magisk, "NVBASE", noConflict, "KSU", "true", "KSU_VER_CODE", "11000"), "", map[string]string{"manager": "kernelsu"}, "", ""},
		{"no matrix", "nomatrix", magisk, "support-matrix.yaml is missing", nil, "", ""},
		{"magisk passes", "default", magisk, "", map[string]string{"manager": "magisk", "manager_version_code": "27000", "api": "35", "abi": "arm64-v8a", "module_version": "0.3.0"}, "", ""},
		{"kernelsu passes", "default", with(magisk, "KSU", "true", "KSU_VER_CODE", "11986", "MAGISK_VER_CODE", "25200", "API", "37"), "", map[string]string{"manager": "kernelsu", "manager_version_code": "11986", "api": "37"}, "", ""},
		{"api from getprop", "default", with(magisk, "API", "", "FAKE_SDK", "36"), "", map[string]string{"api": "36"}, "", ""},
		{"api too low", "default", with(magisk, "API", "34"), "Android API 34 is not supported (supported: 35 to 37)", nil, "", ""},
		{"api too high", "default", with(magisk, "API", "38"), "Android API 38 is not supported", nil, "", ""},
		{"api unreadable", "default", with(magisk, "API", "", "FAKE_SDK", ""), "Cannot read the Android API level", nil, "", ""},
		{"api range set at pack time", "api30-34", with(magisk, "API", "34"), "", map[string]string{"api": "34"}, "", ""},
		{"api above the packed range", "api30-34", with(magisk, "API", "35"), "supported: 30 to 34", nil, "", ""},
		{"old magisk", "default", with(magisk, "MAGISK_VER_CODE", "20300"), "Magisk 20300 is too old; need 20400 or newer", nil, "", ""},
		{"no magisk version", "default", with(magisk, "MAGISK_VER_CODE", ""), "Unknown Magisk version", nil, "", ""},
		{"apatch", "default", with(magisk, "APATCH", "true", "KSU", "true"), "APatch is not supported", nil, "", ""},
		{"wrong abi", "default", with(magisk, "ARCH", "x64"), "built for arm64-v8a but the device is 'x64'", nil, "", ""},
		{"low space", "default", with(magisk, "FAKE_FREE_KB", "204800"), "/data has 200 MB free; AgentOS needs 300 MB", nil, "", ""},
		{"df fails", "default", with(magisk, "FAKE_DF_FAIL", "1"), "Cannot read the free space on /data", nil, "", ""},
	}
	for _, sh := range shells(t) {
		for _, tt := range tests {
			t.Run(filepath.Base(sh[0])+"/"+tt.name, func(t *testing.T) {
				modpath := t.TempDir()
				script := tt.script
				if script == "nomatrix" {
					script = "default"
				} else {
					require.NoError(t, os.WriteFile(filepath.Join(modpath, "support-matrix.yaml"), matrices[script], 0o644))
				}
				args := append(sh[1:], filepath.Join(dir, "harness.sh"))
				cmd := exec.Command(sh[0], args...)
				cmd.Env = []string{"PATH=/usr/bin:/bin", "FAKEBIN=" + bin, "MODPATH=" + modpath, "SCRIPT=" + scripts[script]}
				for k, v := range tt.env {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
				out, err := cmd.CombinedOutput()
				text := string(out)
				if tt.says != "" {
					assert.Contains(t, text, tt.says)
				}
				if tt.silent != "" {
					assert.NotContains(t, text, tt.silent)
				}
				if tt.abort != "" {
					if err == nil || !regexp.MustCompile(`(?m)^abort: ! .*`+regexp.QuoteMeta(tt.abort)).MatchString(text) || strings.Contains(text, "sourced to the end") {
						t.Fatalf("want abort %q, got (%v):\n%s", tt.abort, err, text)
					}
					if _, err := os.Stat(filepath.Join(modpath, "install.prop")); err == nil {
						t.Fatal("install.prop written before an abort")
					}
					return
				}
				if err != nil || !strings.Contains(text, "sourced to the end") {
					t.Fatalf("failed (%v):\n%s", err, text)
				}
				for _, want := range []string{
					"set_perm_recursive " + modpath + " 0 0 0755 0644",
					"set_perm " + modpath + "/bin/agentosd 0 0 0755",
					"set_perm " + modpath + "/service.sh 0 0 0755",
					"set_perm " + modpath + "/uninstall.sh 0 0 0755",
					"set_perm " + modpath + "/action.sh 0 0 0755",
				} {
					if !strings.Contains(text, want) {
						t.Errorf("output lacks %q:\n%s", want, text)
					}
				}
				prop, err := os.ReadFile(filepath.Join(modpath, "install.prop"))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tt.prop {
					if !strings.Contains(string(prop), "\n"+k+"="+v+"\n") && !strings.HasPrefix(string(prop), k+"="+v+"\n") {
						t.Errorf("install.prop lacks %s=%s:\n%s", k, v, prop)
					}
				}
				if !regexp.MustCompile(`(?m)^fingerprint=google/husky/.+$`).Match(prop) || !regexp.MustCompile(`(?m)^flashed_at=\d+$`).Match(prop) {
					t.Errorf("install.prop:\n%s", prop)
				}
			})
		}
	}
}

func TestServiceScript(t *testing.T) {
	t.Parallel()
	o := baseOptions(t)
	o.RuntimeUID, o.SocketPrefix = 19000, "lab1-"
	data, _, _ := entries(t, pack(t, o))
	for _, sh := range shells(t) {
		t.Run(filepath.Base(sh[0]), func(t *testing.T) {
			mod := t.TempDir()
			os.MkdirAll(filepath.Join(mod, "bin"), 0o755)
			record := filepath.Join(mod, "args")
			os.WriteFile(filepath.Join(mod, "bin", "agentosd"), []byte("#!/bin/sh\necho \"$@\" > "+record+"\n"), 0o755)
			os.WriteFile(filepath.Join(mod, "service.sh"), data["service.sh"], 0o755)
			cmd := exec.Command(sh[0], append(sh[1:], filepath.Join(mod, "service.sh"))...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			want := "supervise --moddir " + mod + " --root /data/agentos --min-api 35 --max-api 37 --runtime-uid 19000 --socket-prefix lab1-\n"
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				got, _ := os.ReadFile(record)
				assert.Equal(c, want, string(got), "agentosd's arguments")
			}, 10*time.Second, 10*time.Millisecond)
		})
	}
}

func TestActionScript(t *testing.T) {
	t.Parallel()
	o := baseOptions(t)
	o.Root = "/data/agentos-lab"
	data, _, _ := entries(t, pack(t, o))
	for _, sh := range shells(t) {
		t.Run(filepath.Base(sh[0]), func(t *testing.T) {
			mod := t.TempDir()
			os.MkdirAll(filepath.Join(mod, "bin"), 0o755)
			os.WriteFile(filepath.Join(mod, "bin", "agentosd"), []byte("#!/bin/sh\necho \"args: $*\"\n"), 0o755)
			os.WriteFile(filepath.Join(mod, "action.sh"), data["action.sh"], 0o755)
			cmd := exec.Command(sh[0], append(sh[1:], filepath.Join(mod, "action.sh"))...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			assert.Equal(t, "args: supervise leave-safe-mode --root /data/agentos-lab\n", string(out))
		})
	}
}

func TestUninstallScript(t *testing.T) {
	o := baseOptions(t)
	data, _, _ := entries(t, pack(t, o))
	for _, sh := range shells(t) {
		for _, stubborn := range []bool{false, true} {
			name := filepath.Base(sh[0]) + "/term"
			if stubborn {
				name = filepath.Base(sh[0]) + "/kill"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				root := filepath.Join(dir, "agentos")
				kept := map[string]string{"runtime/store.db": "sessions", "apps/packages.json": "{}", "apps/data/org.x/notes": "mine"}
				gone := []string{"supervisor/supervisor.log", "bin/agentosd", "status", "safe_mode"}
				for _, f := range append(slices.Collect(maps.Keys(kept)), gone...) {
					require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte(kept[f]), 0o644))
				}
				// A stand-in supervisor whose command line says agentosd:
				// sleep under that name, or a shell that ignores SIGTERM.
				fake := exec.Command("sh", "-c", "trap '' TERM; while :; do sleep 0.05; done # agentosd")
				if !stubborn {
					sleep, err := exec.LookPath("sleep")
					if err != nil {
						t.Skip("no sleep binary")
					}
					b, _ := os.ReadFile(sleep)
					os.WriteFile(filepath.Join(dir, "agentosd"), b, 0o755)
					fake = exec.Command(filepath.Join(dir, "agentosd"), "60")
				}
				if err := fake.Start(); err != nil {
					t.Fatal(err)
				}
				reaped := make(chan struct{})
				go func() { fake.Wait(); close(reaped) }()
				os.WriteFile(filepath.Join(root, "supervisor", "supervisor.pid"), []byte(strconv.Itoa(fake.Process.Pid)+"\n"), 0o644)
				script := filepath.Join(dir, "uninstall.sh")
				os.WriteFile(script, data["uninstall.sh"], 0o755)
				cmd := exec.Command(sh[0], append(sh[1:], script)...)
				cmd.Env = []string{"PATH=/usr/bin:/bin", "AGENTOS_ROOT=" + root, "AGENTOS_STOP_WAIT=1"}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				select {
				case <-reaped:
				case <-time.After(10 * time.Second):
					fake.Process.Kill()
					t.Fatal("supervisor still running")
				}
				if st, ok := fake.ProcessState.Sys().(syscall.WaitStatus); ok && stubborn && st.Signal() != syscall.SIGKILL {
					t.Fatalf("stubborn supervisor ended by %v, want SIGKILL", st.Signal())
				}
				for f, want := range kept {
					got, err := os.ReadFile(filepath.Join(root, f))
					require.NoError(t, err, "uninstall removed %s", f)
					assert.Equal(t, want, string(got), f)
				}
				for _, f := range append(gone, "supervisor") {
					_, err := os.Lstat(filepath.Join(root, f))
					assert.ErrorIs(t, err, os.ErrNotExist, "supervisor state %s left", f)
				}
			})
		}
	}
}

func TestUninstallLeavesOtherProcesses(t *testing.T) {
	t.Parallel()
	o := baseOptions(t)
	data, _, _ := entries(t, pack(t, o))
	dir := t.TempDir()
	root := filepath.Join(dir, "agentos")
	os.MkdirAll(filepath.Join(root, "supervisor"), 0o755)
	other := exec.Command("sleep", "60")
	other.Start()
	defer other.Process.Kill()
	// A stale pid file pointing at an unrelated process (pid reuse).
	os.WriteFile(filepath.Join(root, "supervisor", "supervisor.pid"), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644)
	script := filepath.Join(dir, "uninstall.sh")
	os.WriteFile(script, data["uninstall.sh"], 0o755)
	cmd := exec.Command("sh", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "AGENTOS_ROOT=" + root, "AGENTOS_STOP_WAIT=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatal("uninstall.sh killed an unrelated process")
	}
}
