package apps

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentoslab/agentlab/runtime/clock"
)

// Reasons an install or uninstall is refused; match with errors.Is. The
// *InstallError that wraps one names the package.
var (
	ErrDowngrade        = errors.New("downgrade refused (lower versionCode than installed)")
	ErrNotInstalled     = errors.New("package not installed")
	ErrABI              = errors.New("bundle has no binary for this device's ABI")
	ErrSharedUserSigner = errors.New("shared user has packages by another signer")
	ErrSharedUserChange = errors.New("an upgrade cannot change sharedUserId")
	ErrNotRoot          = errors.New("installing needs root")
)

// InstallError is a refused install or uninstall.
type InstallError struct {
	Package string
	Reason  error
	Detail  string
}

func (e *InstallError) Error() string {
	s := "install"
	if e.Package != "" {
		s += " " + e.Package
	}
	s += ": " + e.Reason.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e *InstallError) Unwrap() error { return e.Reason }

// InstallerOptions configure an Installer. The zero value works.
type InstallerOptions struct {
	// FirstUID and LastUID bound the uids given to packages; zero means
	// DefaultFirstUID and DefaultLastUID.
	FirstUID, LastUID int
	// Reserved uids are never given to a package (the runtime's uid).
	Reserved []int
	// AndroidPackagesList is Android's package list; "" means
	// DefaultAndroidPackagesList. When it exists, every uid it lists is
	// skipped.
	AndroidPackagesList string
	// PasswdFile lists the host's users, whose uids are skipped; ""
	// means /etc/passwd.
	PasswdFile string
	// ABI is the ABI to install; "" means HostABI().
	ABI string
	// Clock stamps installs, upgrades and removals; nil means the real
	// clock.
	Clock clock.Clock
	// Logger receives installs, upgrades and removals; nil discards.
	Logger *slog.Logger
}

// InstallResult says what an install did.
type InstallResult struct {
	Package Package
	// Event is the recorded change; nil when the same version by the same
	// signer was already installed (a no-op).
	Event *Event
}

// Installer changes the package table: root only, one at a time. Every
// change verifies first, writes the table atomically, and only then
// removes what the previous version left, so a failure never loses what
// was installed.
type Installer struct {
	dir     string
	opts    InstallerOptions
	logger  *slog.Logger
	mu      sync.Mutex // serializes changes in this process
	lockF   *os.File   // flock against other processes
	codeDir string
	dataDir string
	stage   string
}

// Directory modes of the apps directory tree.
const (
	modeAppsDir  = 0o755 // table and code readable by the runtime
	modeCodeDir  = 0o755
	modeDataRoot = 0o711 // traversable, not listable
	modeAppData  = 0o700
	modeStaging  = 0o700
	// modeSystem: the apps' simulated system services (alarm clock,
	// calendar provider) are files every app uid creates and replaces, so
	// the directory is world-writable without the sticky bit.
	modeSystem = 0o777
)

// OpenInstaller prepares dir (created if missing, root-owned, not
// writable by others) and cleans what an interrupted change left behind.
func OpenInstaller(dir string, opts *InstallerOptions) (*Installer, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("open installer: %w", ErrNotRoot)
	}
	var o InstallerOptions
	if opts != nil {
		o = *opts
	}
	if o.FirstUID == 0 {
		o.FirstUID = DefaultFirstUID
	}
	if o.LastUID == 0 {
		o.LastUID = DefaultLastUID
	}
	if o.FirstUID <= 0 || o.LastUID < o.FirstUID {
		return nil, fmt.Errorf("open installer: bad uid range %d-%d", o.FirstUID, o.LastUID)
	}
	if o.AndroidPackagesList == "" {
		o.AndroidPackagesList = DefaultAndroidPackagesList
	}
	if o.PasswdFile == "" {
		o.PasswdFile = "/etc/passwd"
	}
	if o.ABI == "" {
		o.ABI = HostABI()
	}
	o.Clock = clock.Or(o.Clock)
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open installer: %w", err)
	}
	in := &Installer{dir: dir, opts: o, logger: logger,
		codeDir: filepath.Join(dir, "code"), dataDir: filepath.Join(dir, "data"), stage: filepath.Join(dir, "staging")}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{dir, modeAppsDir}, {in.codeDir, modeCodeDir}, {in.dataDir, modeDataRoot}, {in.stage, modeStaging}, {in.SystemDir(), modeSystem}} {
		if err := ownedDir(d.path, d.mode); err != nil {
			return nil, fmt.Errorf("open installer: %w", err)
		}
	}
	lf, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open installer: %w", err)
	}
	in.lockF = lf
	if err := in.withLock(func(tf *tableFile) (*tableFile, error) {
		in.cleanOrphans(tf)
		return nil, nil
	}); err != nil && !errors.Is(err, ErrTableCorrupt) {
		lf.Close()
		return nil, fmt.Errorf("open installer: %w", err)
	}
	return in, nil
}

// Close releases the installer's lock file.
func (in *Installer) Close() error { return in.lockF.Close() }

// Dir is the apps directory (what OpenTable takes).
func (in *Installer) Dir() string { return in.dir }

// ownedDir makes path a directory owned by root with exactly mode,
// refusing a symlink or a directory someone else owns.
func ownedDir(path string, mode os.FileMode) error {
	if err := os.Mkdir(path, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || st.Uid != 0 {
		return fmt.Errorf("%s: must be a directory owned by root", path)
	}
	return os.Chmod(path, mode)
}

// SystemDir is the directory every app of this device shares for its
// simulated system services; apps get it as AGENTOS_SYSTEM_DATA.
func (in *Installer) SystemDir() string { return filepath.Join(in.dir, "system") }

// withLock runs f on the current table under both locks; a non-nil table
// returned by f is written.
func (in *Installer) withLock(f func(*tableFile) (*tableFile, error)) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := unix.Flock(int(in.lockF.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock package table: %w", err)
	}
	defer unix.Flock(int(in.lockF.Fd()), unix.LOCK_UN)
	tf, fellBack, err := loadTable(in.dir)
	if err != nil {
		return err
	}
	if fellBack {
		// Keep the unreadable file for inspection; the backup goes on.
		main := filepath.Join(in.dir, tableName)
		if _, err := os.Lstat(main); err == nil {
			os.Rename(main, filepath.Join(in.dir, corruptName))
		}
		in.logger.Warn("apps: package table was unreadable; continued from its backup", "kept", corruptName)
		if err := writeTable(in.dir, tf); err != nil {
			return err
		}
	}
	next, err := f(tf)
	if err != nil || next == nil {
		return err
	}
	return writeTable(in.dir, next)
}

// Packages returns the installed packages (root's view of the table).
func (in *Installer) Packages() ([]Package, error) {
	var out []Package
	err := in.withLock(func(tf *tableFile) (*tableFile, error) {
		for _, p := range tf.Packages {
			out = append(out, p.clone())
		}
		return nil, nil
	})
	return out, err
}

// Install verifies the bundle at path and installs it: a new package gets
// a uid, its code and data directories and an Installed event; a higher
// (or equal, with another signer) versionCode replaces the code, keeps
// the uid and data, and records Updated or SignatureChanged; the same
// version by the same signer is a no-op; a lower versionCode is
// ErrDowngrade. The bundle is copied to a private staging file first, so
// whoever owns path cannot change it between verification and unpacking.
func (in *Installer) Install(ctx context.Context, path string) (*InstallResult, error) {
	staged, err := in.stageBundle(path)
	if err != nil {
		return nil, err
	}
	defer os.Remove(staged)
	f, err := os.Open(staged)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	b, err := OpenBundle(f, fi.Size())
	if err != nil {
		return nil, err
	}
	return in.install(ctx, b)
}

// stageBundle copies path to a root-only staging file.
func (in *Installer) stageBundle(path string) (string, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("install: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return "", fmt.Errorf("install: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("install: %s: %w", path, bundleErr("", ErrNotBundle, "not a regular file"))
	}
	if fi.Size() > MaxBundleBytes {
		return "", fmt.Errorf("install: %w", bundleErr("", ErrTooLarge, "%d bytes, the limit is %d", fi.Size(), MaxBundleBytes))
	}
	dst := filepath.Join(in.stage, randomName("bundle-")+".agentapp")
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("install: stage: %w", err)
	}
	n, err := io.Copy(out, io.LimitReader(src, MaxBundleBytes+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > MaxBundleBytes {
		err = bundleErr("", ErrTooLarge, "over %d bytes", MaxBundleBytes)
	}
	if err != nil {
		os.Remove(dst)
		return "", fmt.Errorf("install: stage: %w", err)
	}
	return dst, nil
}

func (in *Installer) install(ctx context.Context, b *Bundle) (*InstallResult, error) {
	m := b.Manifest
	app := m.App
	refuse := func(reason error, format string, args ...any) error {
		return &InstallError{Package: app.Package, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if !slices.Contains(m.ABIs, in.opts.ABI) {
		return nil, refuse(ErrABI, "device ABI %q, bundle has %s", in.opts.ABI, strings.Join(m.ABIs, ", "))
	}
	var result *InstallResult
	var oldCode, newCode string
	err := in.withLock(func(tf *tableFile) (*tableFile, error) {
		now := in.opts.Clock.Now().UnixMilli()
		i := slices.IndexFunc(tf.Packages, func(p Package) bool { return p.Name == app.Package })
		var old *Package
		if i >= 0 {
			old = &tf.Packages[i]
			switch {
			case app.VersionCode < old.VersionCode:
				return nil, refuse(ErrDowngrade, "installed versionCode %d, bundle %d", old.VersionCode, app.VersionCode)
			case app.VersionCode == old.VersionCode && m.SigningDigest == old.SigningDigest:
				result = &InstallResult{Package: old.clone()}
				return nil, nil
			case app.SharedUserID != old.SharedUserID:
				return nil, refuse(ErrSharedUserChange, "installed %q, bundle %q", old.SharedUserID, app.SharedUserID)
			}
		}
		uid, err := in.uidFor(tf, app, m.SigningDigest, old)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
		newCode, err = in.unpack(b, app)
		if err != nil {
			return nil, err
		}
		dataDir := filepath.Join(in.dataDir, app.Package)
		if old == nil {
			// A new install starts with empty data, whatever an earlier
			// install of the name (maybe by another signer) left.
			if err := os.RemoveAll(dataDir); err != nil {
				os.RemoveAll(newCode)
				return nil, fmt.Errorf("install %s: data directory: %w", app.Package, err)
			}
		}
		if err := appDataDir(dataDir, uid); err != nil {
			os.RemoveAll(newCode)
			return nil, fmt.Errorf("install %s: data directory: %w", app.Package, err)
		}
		p := Package{
			Name: app.Package, UID: uid, SigningDigest: m.SigningDigest,
			VersionCode: app.VersionCode, VersionName: app.VersionName, Label: app.Label,
			Services: slices.Clone(app.Services), Caller: app.Caller, SharedUserID: app.SharedUserID,
			Binary: app.Binary, Commands: slices.Clone(app.Commands), Permissions: slices.Clone(app.Permissions), ABI: in.opts.ABI,
			CodeDir: newCode, DataDir: dataDir, ContentDigest: m.ContentDigest,
			InstalledAt: now, UpdatedAt: now,
		}
		if p.Services == nil {
			p.Services = []Service{}
		}
		ev := Event{Seq: tf.Version + 1, Kind: Installed, Package: p.Name, UID: uid, VersionCode: p.VersionCode, SigningDigest: p.SigningDigest, At: now}
		if old != nil {
			p.InstalledAt = old.InstalledAt
			p.PreviousSigningDigest, p.SignatureChangedAt = old.PreviousSigningDigest, old.SignatureChangedAt
			ev.Kind, ev.PreviousVersionCode = Updated, old.VersionCode
			if old.SigningDigest != p.SigningDigest {
				ev.Kind, ev.PreviousSigningDigest = SignatureChanged, old.SigningDigest
				p.PreviousSigningDigest, p.SignatureChangedAt = old.SigningDigest, now
			}
			oldCode = old.CodeDir
			tf.Packages[i] = p
		} else {
			tf.Packages = append(tf.Packages, p)
		}
		key := app.Package
		if app.SharedUserID != "" {
			key = sharedUIDKeyPf + app.SharedUserID
		}
		tf.UIDs[key] = uid
		tf.Version++
		tf.Events = append(tf.Events, ev)
		if len(tf.Events) > maxEvents {
			tf.Events = slices.Clone(tf.Events[len(tf.Events)-maxEvents:])
		}
		result = &InstallResult{Package: p.clone(), Event: &ev}
		return tf, nil
	})
	if err != nil {
		if newCode != "" {
			// The table was not written: the new code is garbage.
			os.RemoveAll(newCode)
		}
		return nil, err
	}
	if result.Event == nil {
		in.logger.Info("apps: already installed", "package", app.Package, "versionCode", app.VersionCode)
		return result, nil
	}
	if oldCode != "" && oldCode != newCode {
		if err := os.RemoveAll(oldCode); err != nil {
			in.logger.Warn("apps: previous code not removed", "package", app.Package, "err", err)
		}
	}
	in.logger.Info("apps: "+strings.ToLower(string(result.Event.Kind)), "package", app.Package, "uid", result.Package.UID,
		"versionCode", app.VersionCode, "signer", m.SigningDigest[:12])
	return result, nil
}

// uidFor returns the uid of a package being installed: the installed
// one's, a shared user's, the one it had before, or a new one.
func (in *Installer) uidFor(tf *tableFile, app *App, digest string, old *Package) (int, error) {
	if app.SharedUserID != "" {
		for _, p := range tf.Packages {
			if p.SharedUserID == app.SharedUserID && p.Name != app.Package && p.SigningDigest != digest {
				return 0, &InstallError{Package: app.Package, Reason: ErrSharedUserSigner,
					Detail: fmt.Sprintf("%s shares %q with signer %s…", p.Name, app.SharedUserID, p.SigningDigest[:12])}
			}
		}
	}
	if old != nil {
		return old.UID, nil
	}
	if app.SharedUserID != "" {
		for _, p := range tf.Packages {
			if p.SharedUserID == app.SharedUserID {
				return p.UID, nil
			}
		}
		if uid, ok := tf.UIDs[sharedUIDKeyPf+app.SharedUserID]; ok {
			return uid, nil
		}
	} else if uid, ok := tf.UIDs[app.Package]; ok {
		return uid, nil
	}
	android, err := AndroidUIDs(in.opts.AndroidPackagesList)
	if err != nil {
		return 0, &InstallError{Package: app.Package, Reason: ErrNoUID, Detail: err.Error()}
	}
	host := passwdUIDs(in.opts.PasswdFile)
	used := map[int]bool{}
	for _, uid := range tf.UIDs {
		used[uid] = true
	}
	for _, p := range tf.Packages {
		used[p.UID] = true
	}
	uid, err := allocateUID(in.opts.FirstUID, in.opts.LastUID, func(uid int) bool {
		return used[uid] || android[uid] || host[uid] || slices.Contains(in.opts.Reserved, uid)
	})
	if err != nil {
		return 0, &InstallError{Package: app.Package, Reason: err}
	}
	return uid, nil
}

// unpack writes the bundle's files for the installed ABI into a new code
// directory (root-owned; directories 0755, files 0644, the binary 0755)
// and returns it. Files are re-hashed while written.
func (in *Installer) unpack(b *Bundle, app *App) (string, error) {
	final := filepath.Join(in.codeDir, app.Package+"-"+randomName(""))
	tmp := final + ".tmp"
	if err := os.Mkdir(tmp, modeCodeDir); err != nil {
		return "", fmt.Errorf("install %s: unpack: %w", app.Package, err)
	}
	fail := func(err error) (string, error) {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("install %s: unpack: %w", app.Package, err)
	}
	dirs := map[string]bool{}
	for _, f := range b.Manifest.Files {
		if strings.HasPrefix(f.Name, "bin/") && !strings.HasPrefix(f.Name, "bin/"+in.opts.ABI+"/") {
			continue
		}
		target := filepath.Join(tmp, filepath.FromSlash(f.Name))
		for d := filepath.Dir(target); d != tmp && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		if err := os.MkdirAll(filepath.Dir(target), modeCodeDir); err != nil {
			return fail(err)
		}
		if err := extract(b, f, target); err != nil {
			return fail(err)
		}
	}
	for d := range dirs {
		if err := os.Chmod(d, modeCodeDir); err != nil {
			return fail(err)
		}
	}
	if err := os.Chmod(tmp, modeCodeDir); err != nil {
		return fail(err)
	}
	if err := syncDir(tmp); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fail(err)
	}
	if err := syncDir(in.codeDir); err != nil {
		os.RemoveAll(final)
		return "", fmt.Errorf("install %s: unpack: %w", app.Package, err)
	}
	return final, nil
}

func extract(b *Bundle, f File, target string) error {
	rc, err := b.Open(f.Name)
	if err != nil {
		return err
	}
	defer rc.Close()
	mode := os.FileMode(entryMode(f.Name) & 0o777)
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(rc, f.Size+1))
	if err == nil && (n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256) {
		err = bundleErr(f.Name, ErrChanged, "while unpacking")
	}
	if err == nil {
		err = out.Chmod(mode)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// appDataDir creates (or keeps) an app's data directory owned by uid,
// mode 0700. An existing entry that is not a plain directory is
// refused: the parent is root's, so only a bug puts one there.
func appDataDir(path string, uid int) error {
	if err := os.Mkdir(path, modeAppData); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		return err
	}
	return os.Chmod(path, modeAppData)
}

// Uninstall removes a package: from the table first (a Removed event),
// then its code and data. Its uid stays reserved for it. The caller stops
// the package's processes before.
func (in *Installer) Uninstall(ctx context.Context, name string) (*Package, error) {
	var removed Package
	err := in.withLock(func(tf *tableFile) (*tableFile, error) {
		i := slices.IndexFunc(tf.Packages, func(p Package) bool { return p.Name == name })
		if i < 0 {
			return nil, &InstallError{Package: name, Reason: ErrNotInstalled}
		}
		removed = tf.Packages[i].clone()
		tf.Packages = slices.Delete(tf.Packages, i, i+1)
		tf.Version++
		tf.Events = append(tf.Events, Event{Seq: tf.Version, Kind: Removed, Package: name, UID: removed.UID,
			VersionCode: removed.VersionCode, SigningDigest: removed.SigningDigest, At: in.opts.Clock.Now().UnixMilli()})
		if len(tf.Events) > maxEvents {
			tf.Events = slices.Clone(tf.Events[len(tf.Events)-maxEvents:])
		}
		return tf, nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range []string{removed.CodeDir, removed.DataDir} {
		if err := os.RemoveAll(d); err != nil {
			in.logger.Warn("apps: leftover after uninstall", "package", name, "err", err)
		}
	}
	in.logger.Info("apps: removed", "package", name, "uid", removed.UID)
	return &removed, nil
}

// cleanOrphans removes code directories no package refers to (left by a
// crash between unpacking and writing the table) and stale staging
// files. Data directories are left alone: after a table restored from
// its backup they may hold an app's only data; a new install of the name
// starts with empty data anyway.
func (in *Installer) cleanOrphans(tf *tableFile) {
	code := map[string]bool{}
	for _, p := range tf.Packages {
		code[p.CodeDir] = true
	}
	clean := func(dir string, keep map[string]bool) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if !keep[p] {
				in.logger.Info("apps: removing leftover", "path", p)
				os.RemoveAll(p)
			}
		}
	}
	clean(in.codeDir, code)
	clean(in.stage, nil)
}

func randomName(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
