package module

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/supervise"
)

// ABIs a module can be built for.
const (
	ABIArm64 = "arm64-v8a"
	ABIX8664 = "x86_64"
)

// ID is the module's id; it never changes (Magisk and KernelSU key on it).
const ID = "agentos"

// Defaults of Options.
const (
	DefaultName        = "AgentOS"
	DefaultAuthor      = "AgentOS Lab"
	DefaultDescription = "On-device agent runtime (agentosd): a root supervisor starts it and its apps under their own uids. Installs nothing into /system."
	DefaultMinAPI      = 35
	DefaultMaxAPI      = 37
	DefaultMagiskMin   = 20400
	DefaultMinFreeMB   = 300
	DefaultRoot        = "/data/agentos"
	// DefaultMatrixVersion is the support matrix's version (spec §11).
	DefaultMatrixVersion = "2026.09.29-1"
)

// Options describe one module build. ABI, Version, VersionCode and
// AgentosdPath are required; zero values of the rest take the defaults.
type Options struct {
	// ABI is arm64-v8a or x86_64.
	ABI string
	// Version is shown by the manager ("0.3.0"): [A-Za-z0-9._+-]{1,32}.
	Version string
	// VersionCode orders module versions (> 0).
	VersionCode int64
	// AgentosdPath is the agentosd binary built for ABI.
	AgentosdPath string

	Name, Author, Description string
	// MinAPI and MaxAPI bound the supported Android API levels.
	MinAPI, MaxAPI int
	// MagiskMin is the oldest Magisk versionCode accepted.
	MagiskMin int
	// MinFreeMB is the free space /data must have.
	MinFreeMB int
	// Root is the supervisor's data directory (supervise --root).
	Root string
	// RuntimeUID, when set, is passed as supervise --runtime-uid.
	RuntimeUID int
	// SocketPrefix, when set, is passed as supervise --socket-prefix.
	SocketPrefix string
	// MatrixVersion names the support matrix (support-matrix.yaml).
	MatrixVersion string
	// KernelSUMin is the oldest KernelSU versionCode accepted (0: any).
	KernelSUMin int
	// VerifiedFingerprints are the ro.build.fingerprint values the module
	// was qualified on; flashing elsewhere warns "unverified device".
	VerifiedFingerprints []string
	// ConflictingModules are module ids that must not be installed.
	ConflictingModules []string
	// Bundles are app bundles the module carries under app/ with their
	// app/apps.list; the supervisor installs or upgrades them at boot
	// (supervise.BundledList).
	Bundles []string
}

var (
	versionRe = regexp.MustCompile(`^[A-Za-z0-9._+-]{1,32}$`)
	pathRe    = regexp.MustCompile(`^/[A-Za-z0-9/._-]*$`)
	prefixRe  = regexp.MustCompile(`^[A-Za-z0-9._-]{0,32}$`)
	// Fingerprints and module ids go into support-matrix.yaml as plain
	// YAML scalars read by customize.sh's line reader.
	fingerprintRe = regexp.MustCompile(`^[A-Za-z0-9._/:+-]{1,256}$`)
	moduleIDRe    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]{0,63}$`)
)

func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Author == "" {
		o.Author = DefaultAuthor
	}
	if o.Description == "" {
		o.Description = DefaultDescription
	}
	if o.MinAPI == 0 {
		o.MinAPI = DefaultMinAPI
	}
	if o.MaxAPI == 0 {
		o.MaxAPI = DefaultMaxAPI
	}
	if o.MagiskMin == 0 {
		o.MagiskMin = DefaultMagiskMin
	}
	if o.MinFreeMB == 0 {
		o.MinFreeMB = DefaultMinFreeMB
	}
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.MatrixVersion == "" {
		o.MatrixVersion = DefaultMatrixVersion
	}
	for _, f := range o.VerifiedFingerprints {
		if !fingerprintRe.MatchString(f) {
			return o, fmt.Errorf("module: verified fingerprint %q: want [A-Za-z0-9._/:+-]{1,256}", f)
		}
	}
	for _, id := range o.ConflictingModules {
		if !moduleIDRe.MatchString(id) || id == ID {
			return o, fmt.Errorf("module: conflicting module %q: want a module id other than %s", id, ID)
		}
	}
	switch {
	case o.ABI != ABIArm64 && o.ABI != ABIX8664:
		return o, fmt.Errorf("module: ABI %q: want %s or %s", o.ABI, ABIArm64, ABIX8664)
	case !versionRe.MatchString(o.Version):
		return o, fmt.Errorf("module: version %q: want [A-Za-z0-9._+-]{1,32}", o.Version)
	case o.VersionCode <= 0:
		return o, fmt.Errorf("module: versionCode %d: want a positive integer", o.VersionCode)
	case o.AgentosdPath == "":
		return o, fmt.Errorf("module: the agentosd binary is required")
	case o.MinAPI < 1 || o.MaxAPI < o.MinAPI:
		return o, fmt.Errorf("module: API range %d-%d", o.MinAPI, o.MaxAPI)
	case !versionRe.MatchString(o.MatrixVersion):
		return o, fmt.Errorf("module: matrix version %q: want [A-Za-z0-9._+-]{1,32}", o.MatrixVersion)
	case o.MagiskMin < 0 || o.KernelSUMin < 0 || o.MinFreeMB < 0 || o.RuntimeUID < 0:
		return o, fmt.Errorf("module: negative limit")
	case !pathRe.MatchString(o.Root) || strings.Contains(o.Root, "..") || o.Root == "/":
		return o, fmt.Errorf("module: root %q: want an absolute path of [A-Za-z0-9/._-]", o.Root)
	case !prefixRe.MatchString(o.SocketPrefix):
		return o, fmt.Errorf("module: socket prefix %q: want [A-Za-z0-9._-]{0,32}", o.SocketPrefix)
	}
	for name, v := range map[string]string{"name": o.Name, "author": o.Author, "description": o.Description} {
		if strings.ContainsAny(v, "\r\n") || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(v) > 512 {
			return o, fmt.Errorf("module: %s must be one line without control characters (≤ 512 bytes)", name)
		}
	}
	return o, nil
}

// checkELF makes sure the binary is an ELF executable for abi.
func checkELF(path, abi string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("module: %s is not an ELF binary: %w", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{ABIArm64: elf.EM_AARCH64, ABIX8664: elf.EM_X86_64}[abi]
	if f.Machine != want || f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("module: %s is built for %v, not %s (GOOS=android or linux, GOARCH=%s)", path, f.Machine, abi,
			map[string]string{ABIArm64: "arm64", ABIX8664: "amd64"}[abi])
	}
	return nil
}

// zipTime is the timestamp of every entry (reproducible builds).
var zipTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// files returns the module's text files (everything but bin/agentosd)
// with their modes.
func files(opts Options) (map[string][]byte, map[string]os.FileMode, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]byte{}
	modes := map[string]os.FileMode{}
	for name, tmpl := range scripts {
		var b bytes.Buffer
		if err := tmpl.Execute(&b, o); err != nil {
			return nil, nil, fmt.Errorf("module: %s: %w", name, err)
		}
		out[name] = b.Bytes()
		modes[name] = 0o644
	}
	for _, exe := range []string{"service.sh", "uninstall.sh", "action.sh", "META-INF/com/google/android/update-binary"} {
		modes[exe] = 0o755
	}
	return out, modes, nil
}

// Pack writes the module zip for opts to w.
func Pack(ctx context.Context, opts Options, w io.Writer) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if err := checkELF(o.AgentosdPath, o.ABI); err != nil {
		return err
	}
	texts, modes, err := files(o)
	if err != nil {
		return err
	}
	bundles, err := bundledFiles(o.Bundles)
	if err != nil {
		return err
	}
	for n, b := range bundles {
		texts[n], modes[n] = b, 0o644
	}
	names := make([]string, 0, len(texts)+1)
	for n := range texts {
		names = append(names, n)
	}
	names = append(names, "bin/agentosd")
	sort.Strings(names)
	zw := zip.NewWriter(w)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("module: %w", err)
		}
		h := &zip.FileHeader{Name: n, Method: zip.Deflate}
		h.SetModTime(zipTime)
		mode := modes[n]
		if n == "bin/agentosd" {
			mode = 0o755
		}
		h.SetMode(mode)
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("module: %w", err)
		}
		if n == "bin/agentosd" {
			err = copyFile(fw, o.AgentosdPath)
		} else {
			_, err = fw.Write(texts[n])
		}
		if err != nil {
			return fmt.Errorf("module: %s: %w", n, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("module: %w", err)
	}
	return nil
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// bundledFiles are app/<package>.agentapp for each bundle and the list
// the supervisor installs them from (one line per bundle: package,
// versionCode, file, SHA-256 of the file, signing digest).
func bundledFiles(paths []string) (map[string][]byte, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	out := map[string][]byte{}
	var list []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("module: bundle: %w", err)
		}
		m, err := apps.VerifyBytes(b)
		if err != nil {
			return nil, fmt.Errorf("module: bundle %s: %w", p, err)
		}
		name := "app/" + m.App.Package + ".agentapp"
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("module: two bundles of %s", m.App.Package)
		}
		out[name] = b
		sum := sha256.Sum256(b)
		list = append(list, fmt.Sprintf("%s %d %s %s %s", m.App.Package, m.App.VersionCode, name, hex.EncodeToString(sum[:]), m.SigningDigest))
	}
	sort.Strings(list)
	out[supervise.BundledList] = []byte("# package versionCode file sha256 signer\n" + strings.Join(list, "\n") + "\n")
	return out, nil
}

// shq quotes s for a POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

var funcs = template.FuncMap{"shq": shq}

var scripts = map[string]*template.Template{
	"module.prop":         template.Must(template.New("module.prop").Funcs(funcs).Parse(moduleProp)),
	"customize.sh":        template.Must(template.New("customize.sh").Funcs(funcs).Parse(customizeSh)),
	"service.sh":          template.Must(template.New("service.sh").Funcs(funcs).Parse(serviceSh)),
	"uninstall.sh":        template.Must(template.New("uninstall.sh").Funcs(funcs).Parse(uninstallSh)),
	"action.sh":           template.Must(template.New("action.sh").Funcs(funcs).Parse(actionSh)),
	"support-matrix.yaml": template.Must(template.New("support-matrix.yaml").Funcs(funcs).Parse(supportMatrix)),
	"META-INF/com/google/android/update-binary":  template.Must(template.New("update-binary").Parse(updateBinary)),
	"META-INF/com/google/android/updater-script": template.Must(template.New("updater-script").Parse("#MAGISK\n")),
}

const moduleProp = `id=agentos
name={{.Name}}
version={{.Version}}
versionCode={{.VersionCode}}
author={{.Author}}
description={{.Description}}
`

// supportMatrix is what the module supports, read at flash time by
// customize.sh (flat keys, lists as "  - item" lines; schema 1).
const supportMatrix = `# AgentOS support matrix: read by customize.sh when the module is flashed.
schema: 1
matrix_version: {{.MatrixVersion}}
api_min: {{.MinAPI}}
api_max: {{.MaxAPI}}
magisk_min: {{.MagiskMin}}
kernelsu_min: {{.KernelSUMin}}
min_free_mb: {{.MinFreeMB}}
verified_fingerprints:{{if not .VerifiedFingerprints}} []{{end}}
{{- range .VerifiedFingerprints}}
  - {{.}}
{{- end}}
conflicting_modules:{{if not .ConflictingModules}} []{{end}}
{{- range .ConflictingModules}}
  - {{.}}
{{- end}}
`

const customizeSh = `# AgentOS: installer step. Magisk and KernelSU source this file after
# unpacking the module into $MODPATH, so it reports with ui_print, stops
# with abort and never calls exit. Its own variables start with agentos_.
AGENTOS_VERSION={{shq .Version}}
AGENTOS_ABI={{.ABI}}
agentos_matrix="$MODPATH/support-matrix.yaml"

# The support matrix: "key: value" lines and lists of "  - item" lines.
matrix_get() {
  sed -n "s/^$1:[[:space:]]*//p" "$agentos_matrix" | head -n 1 | tr -d '\r'
}
matrix_list() {
  awk -v k="$1:" '$1 == k { on = 1; next } /^[^ ]/ { on = 0 } on && $1 == "-" { print $2 }' "$agentos_matrix"
}
matrix_has() {
  matrix_list "$1" | grep -qxF -- "$2"
}
is_uint() {
  case "$1" in ''|*[!0-9]*) return 1 ;; esac
  [ ${#1} -le 18 ]
}

[ -f "$agentos_matrix" ] || abort "! support-matrix.yaml is missing from the module"
[ "$(matrix_get schema)" = 1 ] || abort "! support-matrix.yaml: unknown schema '$(matrix_get schema)'"
AGENTOS_MATRIX_VERSION="$(matrix_get matrix_version)"
AGENTOS_API_MIN="$(matrix_get api_min)"
AGENTOS_API_MAX="$(matrix_get api_max)"
AGENTOS_MAGISK_MIN="$(matrix_get magisk_min)"
AGENTOS_KERNELSU_MIN="$(matrix_get kernelsu_min)"
AGENTOS_MIN_FREE_MB="$(matrix_get min_free_mb)"
for agentos_v in "$AGENTOS_API_MIN" "$AGENTOS_API_MAX" "$AGENTOS_MAGISK_MIN" "$AGENTOS_KERNELSU_MIN" "$AGENTOS_MIN_FREE_MB"; do
  is_uint "$agentos_v" || abort "! support-matrix.yaml: bad number '$agentos_v'"
done

ui_print "- AgentOS $AGENTOS_VERSION ($AGENTOS_ABI), support matrix $AGENTOS_MATRIX_VERSION"

# Root manager: KernelSU says so with KSU=true (and fakes MAGISK_VER_CODE,
# so Magisk is whatever is not KernelSU). APatch is not supported.
if [ "$APATCH" = "true" ]; then
  abort "! APatch is not supported; use Magisk ($AGENTOS_MAGISK_MIN or newer) or KernelSU"
fi
if [ "$KSU" = "true" ]; then
  agentos_manager=kernelsu
  agentos_manager_code="${KSU_VER_CODE:-0}"
  is_uint "$agentos_manager_code" || abort "! Unknown KernelSU version '$agentos_manager_code'"
  if [ "$agentos_manager_code" -lt "$AGENTOS_KERNELSU_MIN" ]; then
    abort "! KernelSU $agentos_manager_code is too old; need $AGENTOS_KERNELSU_MIN or newer"
  fi
else
  agentos_manager=magisk
  agentos_manager_code="$MAGISK_VER_CODE"
  case "$agentos_manager_code" in
    ''|*[!0-9]*) abort "! Unknown Magisk version '$agentos_manager_code'; need $AGENTOS_MAGISK_MIN or newer" ;;
  esac
  if [ "$agentos_manager_code" -lt "$AGENTOS_MAGISK_MIN" ]; then
    abort "! Magisk $agentos_manager_code is too old; need $AGENTOS_MAGISK_MIN or newer"
  fi
fi
ui_print "- Root manager: $agentos_manager $agentos_manager_code"

# Android version.
agentos_api="$API"
[ -n "$agentos_api" ] || agentos_api="$(getprop ro.build.version.sdk)"
case "$agentos_api" in
  ''|*[!0-9]*) abort "! Cannot read the Android API level ('$agentos_api')" ;;
esac
if [ "$agentos_api" -lt "$AGENTOS_API_MIN" ] || [ "$agentos_api" -gt "$AGENTOS_API_MAX" ]; then
  abort "! Android API $agentos_api is not supported (supported: $AGENTOS_API_MIN to $AGENTOS_API_MAX)"
fi

# The binary's ABI.
case "$ARCH" in
  arm64) agentos_abi=arm64-v8a ;;
  x64) agentos_abi=x86_64 ;;
  *) agentos_abi="$ARCH" ;;
esac
if [ "$agentos_abi" != "$AGENTOS_ABI" ]; then
  abort "! This module is built for $AGENTOS_ABI but the device is '$ARCH'"
fi

# Free space on /data (df -P: one line per file system, column 4 in KiB).
agentos_free_kb="$(df -Pk /data 2>/dev/null | tail -n 1 | awk '{print $4}')"
case "$agentos_free_kb" in
  ''|*[!0-9]*) abort "! Cannot read the free space on /data" ;;
esac
if [ "$agentos_free_kb" -lt $((AGENTOS_MIN_FREE_MB * 1024)) ]; then
  abort "! /data has $((agentos_free_kb / 1024)) MB free; AgentOS needs $AGENTOS_MIN_FREE_MB MB"
fi

# Modules that must not run alongside (one flagged for removal is gone
# at the next boot).
agentos_modules="${NVBASE:-/data/adb}/modules"
for agentos_m in $(matrix_list conflicting_modules); do
  if [ -d "$agentos_modules/$agentos_m" ] && [ ! -e "$agentos_modules/$agentos_m/remove" ]; then
    abort "! The module '$agentos_m' conflicts with AgentOS; remove it first"
  fi
done

# A device the matrix does not list works, but was not qualified.
agentos_fingerprint="$(getprop ro.build.fingerprint)"
agentos_verified=0
if [ -n "$agentos_fingerprint" ] && matrix_has verified_fingerprints "$agentos_fingerprint"; then
  agentos_verified=1
else
  ui_print "! Warning: unverified device ($agentos_fingerprint is not in support matrix $AGENTOS_MATRIX_VERSION)"
fi

# What was installed where, for diagnostics.
{
  echo "module_version=$AGENTOS_VERSION"
  echo "matrix_version=$AGENTOS_MATRIX_VERSION"
  echo "api=$agentos_api"
  echo "abi=$agentos_abi"
  echo "manager=$agentos_manager"
  echo "manager_version_code=$agentos_manager_code"
  echo "fingerprint=$agentos_fingerprint"
  echo "fingerprint_verified=$agentos_verified"
  echo "flashed_at=$(date +%s)"
} > "$MODPATH/install.prop"

set_perm_recursive "$MODPATH" 0 0 0755 0644
set_perm "$MODPATH/bin/agentosd" 0 0 0755
set_perm "$MODPATH/service.sh" 0 0 0755
set_perm "$MODPATH/uninstall.sh" 0 0 0755
set_perm "$MODPATH/action.sh" 0 0 0755
ui_print "- Installed; AgentOS starts after the next reboot"
`

const serviceSh = `#!/system/bin/sh
# AgentOS: late_start service. Start the supervisor in the background; it
# waits for sys.boot_completed itself, guards the runtime, keeps its own
# log under {{.Root}}/supervisor and exits when this module is disabled.
MODDIR=${0%/*}
"$MODDIR/bin/agentosd" supervise --moddir "$MODDIR" --root {{shq .Root}} --min-api {{.MinAPI}} --max-api {{.MaxAPI}}{{if .RuntimeUID}} --runtime-uid {{.RuntimeUID}}{{end}}{{if .SocketPrefix}} --socket-prefix {{shq .SocketPrefix}}{{end}} </dev/null >/dev/null 2>&1 &
`

const uninstallSh = `#!/system/bin/sh
# AgentOS: runs when the module is removed. Stop the supervisor (SIGTERM,
# SIGKILL after a few seconds; the runtime and the apps stop with it) and
# remove only the supervisor's own state: its pid file and logs, the
# status, the safe-mode marker and the binary's copy. The runtime's store
# (sessions, grants, the model key) and the apps with their data are kept,
# as upstream keeps the app: removing the module to update or repair it
# must not lose them (an uninstall script cannot ask). To erase them too,
# remove {{.Root}} by hand after the reboot.
AGENTOS_ROOT="${AGENTOS_ROOT:-{{.Root}}}"
AGENTOS_STOP_WAIT="${AGENTOS_STOP_WAIT:-6}"
agentos_pidfile="$AGENTOS_ROOT/supervisor/supervisor.pid"
agentos_pid=
[ -f "$agentos_pidfile" ] && agentos_pid="$(head -n 1 "$agentos_pidfile")"
case "$agentos_pid" in
  ''|*[!0-9]*) agentos_pid= ;;
esac
# Only signal the pid if it still is agentosd (pids are reused).
if [ -n "$agentos_pid" ] && grep -q agentosd "/proc/$agentos_pid/cmdline" 2>/dev/null; then
  kill -TERM "$agentos_pid" 2>/dev/null
  agentos_waited=0
  while [ "$agentos_waited" -lt "$AGENTOS_STOP_WAIT" ] && kill -0 "$agentos_pid" 2>/dev/null; do
    sleep 1
    agentos_waited=$((agentos_waited + 1))
  done
  kill -9 "$agentos_pid" 2>/dev/null
fi
rm -rf "$AGENTOS_ROOT/supervisor" "$AGENTOS_ROOT/bin" "$AGENTOS_ROOT/status" "$AGENTOS_ROOT/safe_mode"
`

// actionSh is the root manager's action button (Magisk 28+, KernelSU):
// it leaves safe mode, the one thing an owner has to do by hand after a
// crash loop. The manager shows its output.
const actionSh = `#!/system/bin/sh
# AgentOS: the module's action button. Leave safe mode (after a crash
# loop the supervisor runs the runtime refusing new tasks until asked).
MODDIR=${0%/*}
"$MODDIR/bin/agentosd" supervise leave-safe-mode --root {{shq .Root}}
`

// updateBinary is the recovery-mode entry point of a Magisk module zip:
// it hands the zip to Magisk's own module installer.
const updateBinary = `#!/sbin/sh
# AgentOS module: recovery entry point. Everything is done by Magisk's
# installer functions (util_functions.sh), which need Magisk 20.4 or newer.
umask 022
OUTFD=$2
ZIPFILE=$3
ui_print() { echo "$1"; }
agentos_need_magisk() {
  ui_print "! AgentOS needs Magisk 20.4 or newer installed"
  exit 1
}
mount /data 2>/dev/null
[ -f /data/adb/magisk/util_functions.sh ] || agentos_need_magisk
. /data/adb/magisk/util_functions.sh
[ "$MAGISK_VER_CODE" -lt 20400 ] && agentos_need_magisk
install_module
exit 0
`
