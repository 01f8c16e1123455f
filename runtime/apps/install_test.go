package apps

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
)

// appSource is a bundle source for pkg at versionCode with extra app.json
// fields (a JSON fragment starting with a comma, or "").
func appSource(pkg string, versionCode int64, extra string) fstest.MapFS {
	return fstest.MapFS{
		"app.json": {Data: []byte(fmt.Sprintf(`{"package":%q,"label":"L","versionCode":%d,"binary":"app",
"services":[{"name":"S","kind":"mcp","server":"main"}],"commands":["id"]%s}`, pkg, versionCode, extra))},
		"bin/x86_64/app":                  {Data: []byte(fmt.Sprintf("x86 v%d", versionCode))},
		"bin/arm64-v8a/app":               {Data: []byte(fmt.Sprintf("arm v%d", versionCode))},
		"assets/agent-plugin/plugin.json": {Data: []byte(`{}`)},
	}
}

// writeBundle packs src with key into a file and returns its path.
func writeBundle(t *testing.T, dir string, src fstest.MapFS, key ed25519.PrivateKey) string {
	t.Helper()
	b := packBytes(t, src, key)
	p := filepath.Join(dir, fmt.Sprintf("b%d.agentapp", time.Now().UnixNano()))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type installEnv struct {
	t      *testing.T
	dir    string // apps dir
	tmp    string
	in     *Installer
	opts   InstallerOptions
	passwd string
}

func newInstallEnv(t *testing.T, opts *InstallerOptions) *installEnv {
	t.Helper()
	testenv.NeedRoot(t)
	tmp := t.TempDir()
	e := &installEnv{t: t, dir: filepath.Join(tmp, "apps"), tmp: tmp}
	if opts != nil {
		e.opts = *opts
	}
	e.opts.ABI = ABIX8664
	if e.opts.AndroidPackagesList == "" {
		e.opts.AndroidPackagesList = filepath.Join(tmp, "no-packages.list")
	}
	if e.opts.PasswdFile == "" {
		e.opts.PasswdFile = filepath.Join(tmp, "passwd")
		os.WriteFile(e.opts.PasswdFile, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	}
	in, err := OpenInstaller(e.dir, &e.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	e.in = in
	return e
}

func (e *installEnv) install(src fstest.MapFS, key ed25519.PrivateKey) (*InstallResult, error) {
	e.t.Helper()
	return e.in.Install(context.Background(), writeBundle(e.t, e.tmp, src, key))
}

func (e *installEnv) table() *Table {
	e.t.Helper()
	tb, err := OpenTable(e.dir, &TableOptions{PollInterval: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	return tb
}

func statOwner(t *testing.T, path string) (uid int, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid), fi.Mode()
}

func TestInstallLifecycle(t *testing.T) {
	e := newInstallEnv(t, nil)
	const pkg = "org.agentos.test.life"
	k1, k2 := testKey(1), testKey(2)

	// Install.
	r, err := e.install(appSource(pkg, 3, ""), k1)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Package
	if r.Event == nil || r.Event.Kind != Installed || p.UID != DefaultFirstUID || p.VersionCode != 3 || p.SigningDigest != SigningDigest(k1.Public().(ed25519.PublicKey)) {
		t.Fatalf("install: %+v %+v", r.Event, p)
	}
	if b, err := os.ReadFile(p.BinaryPath()); err != nil || string(b) != "x86 v3" {
		t.Fatalf("binary: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(p.CodeDir, "bin", ABIArm64)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the other ABI's binary was unpacked: %v", err)
	}
	if uid, mode := statOwner(t, p.BinaryPath()); uid != 0 || mode.Perm() != 0o755 {
		t.Errorf("binary owner %d mode %v", uid, mode)
	}
	if uid, mode := statOwner(t, filepath.Join(p.PluginDir(), "plugin.json")); uid != 0 || mode.Perm() != 0o644 {
		t.Errorf("asset owner %d mode %v", uid, mode)
	}
	if uid, mode := statOwner(t, p.DataDir); uid != p.UID || mode.Perm() != 0o700 || !mode.IsDir() {
		t.Errorf("data dir owner %d mode %v", uid, mode)
	}
	if uid, mode := statOwner(t, filepath.Join(e.dir, tableName)); uid != 0 || mode.Perm() != 0o644 {
		t.Errorf("table owner %d mode %v", uid, mode)
	}
	os.WriteFile(filepath.Join(p.DataDir, "kept"), []byte("data"), 0o600)

	tb := e.table()
	defer tb.Close()
	if got, ok := tb.ByName(pkg); !ok || got.UID != p.UID {
		t.Fatalf("ByName: %+v %v", got, ok)
	}
	if got := tb.ByUID(p.UID); len(got) != 1 || got[0].Name != pkg {
		t.Fatalf("ByUID: %+v", got)
	}
	if tb.ByUID(12345) != nil {
		t.Fatal("ByUID of an unknown uid")
	}

	// Same version, same signer: no-op.
	v := tb.Version()
	r, err = e.install(appSource(pkg, 3, ""), k1)
	if err != nil || r.Event != nil {
		t.Fatalf("reinstall: %+v %v", r, err)
	}
	tb.Reload()
	if tb.Version() != v {
		t.Fatal("a no-op reinstall changed the table")
	}

	// Upgrade, same signer.
	r, err = e.install(appSource(pkg, 4, ""), k1)
	if err != nil || r.Event.Kind != Updated || r.Event.PreviousVersionCode != 3 || r.Package.UID != p.UID {
		t.Fatalf("upgrade: %+v %v", r, err)
	}
	if _, err := os.Stat(p.CodeDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old code dir kept: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Package.DataDir, "kept")); string(b) != "data" {
		t.Error("upgrade lost the app's data")
	}

	// Upgrade by another signer: kept uid, recorded as a signature change.
	r, err = e.install(appSource(pkg, 5, ""), k2)
	if err != nil || r.Event.Kind != SignatureChanged || r.Package.UID != p.UID ||
		r.Package.PreviousSigningDigest != p.SigningDigest || r.Event.PreviousSigningDigest != p.SigningDigest || r.Package.SignatureChangedAt == 0 {
		t.Fatalf("signature change: %+v %+v %v", r.Event, r.Package, err)
	}

	// Downgrade refused; nothing changes.
	before, _ := os.ReadFile(filepath.Join(e.dir, tableName))
	_, err = e.install(appSource(pkg, 4, ""), k2)
	var ie *InstallError
	if !errors.Is(err, ErrDowngrade) || !errors.As(err, &ie) || ie.Package != pkg {
		t.Fatalf("downgrade: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(e.dir, tableName)); string(after) != string(before) {
		t.Fatal("a refused downgrade changed the table")
	}

	// Events.
	tb.Reload()
	evs, complete := tb.Events(0)
	var kinds []EventKind
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if !complete || !slices.Equal(kinds, []EventKind{Installed, Updated, SignatureChanged}) {
		t.Fatalf("events %v complete=%v", kinds, complete)
	}
	if evs, complete := tb.Events(evs[1].Seq); !complete || len(evs) != 1 || evs[0].Kind != SignatureChanged {
		t.Fatalf("events since: %+v", evs)
	}

	// Uninstall: gone, code and data removed, uid kept for the name.
	changed := tb.Changed()
	cur, _ := tb.ByName(pkg)
	if _, err := e.in.Uninstall(context.Background(), pkg); err != nil {
		t.Fatal(err)
	}
	tb.Reload()
	select {
	case <-changed:
	default:
		t.Fatal("Changed not closed by a reload that saw a change")
	}
	if _, ok := tb.ByName(pkg); ok {
		t.Fatal("still installed")
	}
	for _, d := range []string{cur.CodeDir, cur.DataDir} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", d, err)
		}
	}
	if _, err := e.in.Uninstall(context.Background(), pkg); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("second uninstall: %v", err)
	}

	// A new install of the name gets its old uid back, and empty data.
	r, err = e.install(appSource(pkg, 1, ""), k1)
	if err != nil || r.Event.Kind != Installed || r.Package.UID != p.UID {
		t.Fatalf("reinstall after uninstall: %+v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(r.Package.DataDir, "kept")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a fresh install inherited old data")
	}
}

func TestInstallRefusesBadBundles(t *testing.T) {
	e := newInstallEnv(t, nil)
	if _, err := e.install(appSource("org.a.ok", 1, ""), testKey(1)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(e.dir, tableName))

	good := packBytes(t, appSource("org.a.bad", 1, ""), testKey(1))
	tampered := slices.Clone(good)
	tampered[strings.Index(string(tampered), "x86 v1")] ^= 1
	armOnly := appSource("org.a.arm", 1, "")
	delete(armOnly, "bin/x86_64/app")

	tests := []struct {
		name   string
		bundle []byte
		want   error
	}{
		{"tampered", tampered, ErrChanged},
		{"no binary for this ABI", packBytes(t, armOnly, testKey(1)), ErrABI},
		{"not a bundle", []byte("hello"), ErrNotBundle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(e.tmp, "bad.agentapp")
			os.WriteFile(p, tt.bundle, 0o644)
			if _, err := e.in.Install(context.Background(), p); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := e.in.Install(context.Background(), e.tmp); err == nil {
		t.Fatal("a directory installed")
	}
	if after, _ := os.ReadFile(filepath.Join(e.dir, tableName)); string(after) != string(before) {
		t.Fatal("refused installs changed the table")
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "code")); len(ents) != 1 {
		t.Fatalf("code dirs left behind: %d", len(ents))
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "staging")); len(ents) != 0 {
		t.Fatalf("staging files left behind: %d", len(ents))
	}
}

func TestUIDAllocation(t *testing.T) {
	testenv.NeedRoot(t)
	tmp := t.TempDir()
	plist := filepath.Join(tmp, "packages.list")
	os.WriteFile(plist, []byte("com.android.a 10100 0 /data/user/0/com.android.a default:targetSdkVersion=35 3003\n"+
		"com.android.b 10101 0 /data/user/0/com.android.b platform 3003,3002\nbroken\n"), 0o644)
	passwd := filepath.Join(tmp, "passwd")
	os.WriteFile(passwd, []byte("root:x:0:0::/root:/bin/sh\nbob:x:10103:10103::/home/bob:/bin/sh\n"), 0o644)
	e := newInstallEnv(t, &InstallerOptions{AndroidPackagesList: plist, PasswdFile: passwd, Reserved: []int{10102}, LastUID: 10105})
	var got []int
	for i := 0; i < 2; i++ {
		r, err := e.install(appSource(fmt.Sprintf("org.a.p%d", i), 1, ""), testKey(1))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Package.UID)
	}
	if !slices.Equal(got, []int{10104, 10105}) {
		t.Fatalf("uids %v, want 10104 10105 (10100-10101 Android's, 10102 reserved, 10103 a host user)", got)
	}
	if _, err := e.install(appSource("org.a.p9", 1, ""), testKey(1)); !errors.Is(err, ErrNoUID) {
		t.Fatalf("exhausted range: %v", err)
	}
	// An unreadable package list stops allocation rather than guessing.
	os.Remove(plist)
	os.Mkdir(plist, 0o755)
	e2 := newInstallEnv(t, &InstallerOptions{AndroidPackagesList: plist})
	if _, err := e2.install(appSource("org.a.q", 1, ""), testKey(1)); !errors.Is(err, ErrNoUID) {
		t.Fatalf("unreadable packages.list: %v", err)
	}
}

func TestSharedUID(t *testing.T) {
	e := newInstallEnv(t, nil)
	shared := `,"sharedUserId":"org.agentos.shared"`
	a, err := e.install(appSource("org.s.a", 1, shared), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.install(appSource("org.s.b", 1, shared), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if a.Package.UID != b.Package.UID || a.Package.DataDir == b.Package.DataDir {
		t.Fatalf("shared uid: %d %d, data %s %s", a.Package.UID, b.Package.UID, a.Package.DataDir, b.Package.DataDir)
	}
	if _, err := e.install(appSource("org.s.c", 1, shared), testKey(2)); !errors.Is(err, ErrSharedUserSigner) {
		t.Fatalf("other signer joined the shared user: %v", err)
	}
	if _, err := e.install(appSource("org.s.a", 2, shared), testKey(2)); !errors.Is(err, ErrSharedUserSigner) {
		t.Fatalf("member re-signed away from the others: %v", err)
	}
	if _, err := e.install(appSource("org.s.a", 2, ""), testKey(1)); !errors.Is(err, ErrSharedUserChange) {
		t.Fatalf("upgrade left the shared user: %v", err)
	}
	tb := e.table()
	defer tb.Close()
	if got := tb.ByUID(a.Package.UID); len(got) != 2 || got[0].Name != "org.s.a" || got[1].Name != "org.s.b" {
		t.Fatalf("ByUID of a shared uid: %+v", got)
	}
	if c, err := e.install(appSource("org.s.own", 1, ""), testKey(1)); err != nil || c.Package.UID == a.Package.UID {
		t.Fatalf("unshared package: %+v %v", c, err)
	}
}

func TestCorruptTable(t *testing.T) {
	e := newInstallEnv(t, nil)
	if _, err := e.install(appSource("org.c.one", 1, ""), testKey(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.install(appSource("org.c.two", 1, ""), testKey(1)); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(e.dir, tableName)
	// The backup is the previous version: one package.
	os.WriteFile(main, []byte(`{"format":1,"version":`), 0o644)

	tb, err := OpenTable(e.dir, &TableOptions{PollInterval: -1})
	if err != nil {
		t.Fatalf("reader with a readable backup: %v", err)
	}
	if all := tb.All(); len(all) != 1 || all[0].Name != "org.c.one" {
		t.Fatalf("reader did not use the backup: %+v", all)
	}
	tb.Close()

	// The writer keeps the bad file and continues from the backup.
	r, err := e.install(appSource("org.c.three", 1, ""), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, corruptName)); string(b) != `{"format":1,"version":` {
		t.Fatalf("corrupt copy not kept: %q", b)
	}
	if r.Package.UID == 0 {
		t.Fatal("no uid")
	}

	// Both unreadable: refused, never treated as empty.
	os.WriteFile(main, []byte("garbage"), 0o644)
	os.WriteFile(filepath.Join(e.dir, backupName), []byte("garbage"), 0o644)
	if _, err := OpenTable(e.dir, nil); !errors.Is(err, ErrTableCorrupt) {
		t.Fatalf("reader: %v", err)
	}
	if _, err := e.install(appSource("org.c.four", 1, ""), testKey(1)); !errors.Is(err, ErrTableCorrupt) {
		t.Fatalf("writer: %v", err)
	}
	if _, err := e.in.Uninstall(context.Background(), "org.c.one"); !errors.Is(err, ErrTableCorrupt) {
		t.Fatalf("uninstall: %v", err)
	}
	if b, _ := os.ReadFile(main); string(b) != "garbage" {
		t.Fatal("the unreadable table was overwritten")
	}
}

func TestTableWatchesFile(t *testing.T) {
	e := newInstallEnv(t, nil)
	tb, err := OpenTable(e.dir, &TableOptions{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	changed := tb.Changed()
	if _, err := e.install(appSource("org.w.one", 1, ""), testKey(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the table did not notice the install")
	}
	if _, ok := tb.ByName("org.w.one"); !ok {
		t.Fatal("not visible after the change")
	}
	// A reader that missed more events than the table keeps learns so.
	if _, complete := tb.Events(tb.Version() + 5); complete {
		t.Fatal("a version from the future is not complete")
	}
}

func TestOrphanCodeCleanedAtOpen(t *testing.T) {
	e := newInstallEnv(t, nil)
	r, err := e.install(appSource("org.o.one", 1, ""), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(e.dir, "code", "org.o.two-deadbeef.tmp")
	os.MkdirAll(orphan, 0o755)
	os.WriteFile(filepath.Join(e.dir, "staging", "bundle-x.agentapp"), nil, 0o600)
	e.in.Close()
	in2, err := OpenInstaller(e.dir, &e.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Close()
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("orphan code dir kept")
	}
	if _, err := os.Stat(r.Package.CodeDir); err != nil {
		t.Fatal("installed code removed")
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "staging")); len(ents) != 0 {
		t.Fatal("staging not cleared")
	}
}

func TestInstallerRefusesForeignDir(t *testing.T) {
	testenv.NeedRoot(t)
	dir := t.TempDir()
	os.Chown(dir, 10150, 10150)
	if _, err := OpenInstaller(dir, nil); err == nil || !strings.Contains(err.Error(), "owned by root") {
		t.Fatalf("apps dir owned by an app: %v", err)
	}
}
