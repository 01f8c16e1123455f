package appadmin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// The test binary doubles as `agentosd ctl` run under other uids.
func TestMain(m *testing.M) {
	if os.Getenv("ADMIN_TEST_CTL") == "1" {
		os.Exit(admin.Ctl(context.Background(), ctlVerbs(), os.Args[1:], admin.CtlIO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

func ctlVerbs() []admin.Verb { return append(admin.Verbs(), Verbs()...) }

func testNames(t testing.TB) transport.Names {
	var b [4]byte
	rand.Read(b[:])
	return transport.Names{Prefix: "t" + hex.EncodeToString(b[:]) + "-"}
}

func runCtl(t *testing.T, prefix string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--socket-prefix", prefix}, args...)
	code := admin.Ctl(context.Background(), ctlVerbs(), full, admin.CtlIO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

var testapp struct {
	once sync.Once
	bin  []byte
	err  error
}

// testappBinary builds runtime/apps/internal/testapp once.
func testappBinary(t *testing.T) []byte {
	t.Helper()
	testapp.once.Do(func() {
		dir, err := os.MkdirTemp("", "admin-testapp-")
		if err != nil {
			testapp.err = err
			return
		}
		defer os.RemoveAll(dir)
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "testapp"), "github.com/agentoslab/agentlab/runtime/apps/internal/testapp").CombinedOutput()
		if err != nil {
			testapp.err = fmt.Errorf("build testapp: %v\n%s", err, out)
			return
		}
		testapp.bin, testapp.err = os.ReadFile(filepath.Join(dir, "testapp"))
	})
	if testapp.err != nil {
		t.Fatal(testapp.err)
	}
	return testapp.bin
}

const lifePkg = "org.agentos.test.admin"

// bundleFile packs the test app at versionCode, signed by key.
func bundleFile(t *testing.T, dir string, versionCode int, key ed25519.PrivateKey) string {
	t.Helper()
	src := fstest.MapFS{
		"app.json": {Data: []byte(fmt.Sprintf(`{"package":%q,"label":"Admin test","versionCode":%d,"versionName":"1.%d","binary":"testapp",
"services":[{"name":"Main","kind":"mcp","server":"main"}],"commands":["id","exit"]}`, lifePkg, versionCode, versionCode))},
		apps.BinaryPath(apps.HostABI(), "testapp"): {Data: testappBinary(t)},
	}
	var buf bytes.Buffer
	if _, err := apps.Pack(context.Background(), src, key, &buf); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.VerifyBytes(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("app-v%d-%x.agentapp", versionCode, key.Public().(ed25519.PublicKey)[:4]))
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type appsEnv struct {
	names transport.Names
	dir   string
	table *apps.Table
}

// startAppsEnv runs, in this process, what `agentosd supervise` and
// `agentosd serve` run: a launcher over an installer, and an admin server
// with the package table and the launcher client.
func startAppsEnv(t *testing.T) *appsEnv {
	t.Helper()
	testenv.NeedRoot(t)
	root := apptest.OpenDir(t)
	names := testNames(t)
	in, err := apps.OpenInstaller(filepath.Join(root, "apps"), &apps.InstallerOptions{
		FirstUID: 10500, LastUID: 10599, AndroidPackagesList: filepath.Join(root, "none"), PasswdFile: filepath.Join(root, "none")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	ln, err := launcher.NewServer(&launcher.Options{Installer: in, Names: names, RuntimeUID: 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := ln.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	table, err := apps.OpenTable(in.Dir(), &apps.TableOptions{PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	srv := admin.NewServer(&admin.Options{Name: names.Admin(), RuntimeUID: 10099, Version: "test",
		Methods: Methods(table, launcher.NewClient(ln.Socket())), Status: []admin.StatusSection{AppsSection(table)}})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &appsEnv{names: names, dir: root, table: table}
}

func TestAppLifecycleThroughCtl(t *testing.T) {
	e := startAppsEnv(t)
	p := e.names.Prefix
	k1, _ := apps.GenerateKey()
	k2, _ := apps.GenerateKey()
	d1 := apps.SigningDigest(k1.Public().(ed25519.PublicKey))

	code, out, errs := runCtl(t, p, "", "app", "install", bundleFile(t, e.dir, 1, k1))
	if code != admin.ExitOK || !strings.HasPrefix(out, "installed "+lifePkg+" 1.1 (versionCode 1, uid ") || !strings.Contains(out, d1[:12]) {
		t.Fatalf("install: %d %q %q", code, out, errs)
	}
	code, out, _ = runCtl(t, p, "", "app", "list", "--json")
	var list []apps.Package
	if code != admin.ExitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].SigningDigest != d1 {
		t.Fatalf("list: %d %s", code, out)
	}
	uid := list[0].UID

	// A debug command runs as the app's uid; ctl prints its stdout.
	code, out, errs = runCtl(t, p, "", "app", "run", lifePkg, "--", "id")
	if code != admin.ExitOK || strings.TrimSpace(out) != strconv.Itoa(uid) {
		t.Fatalf("run id: %d %q %q (uid %d)", code, out, errs, uid)
	}
	// ctl exits with the app's exit code.
	if code, out, _ = runCtl(t, p, "", "app", "run", lifePkg, "--", "exit", "5"); code != 5 || out != "exiting with 5\n" {
		t.Fatalf("run exit 5: %d %q", code, out)
	}
	if code, _, errs = runCtl(t, p, "", "app", "run", lifePkg, "--", "rm", "-rf", "/"); code != admin.ExitFailed || !strings.Contains(errs, "not a debug command") {
		t.Fatalf("run of an undeclared command: %d %q", code, errs)
	}

	// Upgrade, same signer.
	if code, out, errs = runCtl(t, p, "", "app", "install", bundleFile(t, e.dir, 2, k1)); code != admin.ExitOK || !strings.HasPrefix(out, "updated "+lifePkg) {
		t.Fatalf("upgrade: %d %q %q", code, out, errs)
	}
	// Upgrade by another signer: flagged, same uid.
	code, out, errs = runCtl(t, p, "", "app", "install", bundleFile(t, e.dir, 3, k2))
	if code != admin.ExitOK || !strings.Contains(out, "SIGNATURE CHANGED from "+d1[:12]) || !strings.Contains(out, fmt.Sprintf("uid %d", uid)) {
		t.Fatalf("signature change: %d %q %q", code, out, errs)
	}
	e.table.Reload()
	if evs, _ := e.table.Events(0); len(evs) != 3 || evs[2].Kind != apps.SignatureChanged {
		t.Fatalf("change feed %+v", evs)
	}
	// Reinstalling the same version is a no-op success.
	if code, out, _ = runCtl(t, p, "", "app", "install", bundleFile(t, e.dir, 3, k2)); code != admin.ExitOK || !strings.HasPrefix(out, "already installed") {
		t.Fatalf("same version: %d %q", code, out)
	}
	// Downgrade refused, with the reason in JSON too.
	code, out, _ = runCtl(t, p, "", "app", "install", bundleFile(t, e.dir, 2, k2), "--json")
	if code != admin.ExitFailed || !strings.Contains(out, `"reason":"downgrade"`) {
		t.Fatalf("downgrade: %d %s", code, out)
	}
	// A tampered bundle is refused with the entry named.
	bad := bundleFile(t, e.dir, 9, k2)
	b, _ := os.ReadFile(bad)
	b[bytes.Index(b, []byte(`"Admin test"`))+1] ^= 1
	os.WriteFile(bad, b, 0o644)
	if code, _, errs = runCtl(t, p, "", "app", "install", bad); code != admin.ExitFailed || !strings.Contains(errs, `entry "app.json": entry changed after signing`) {
		t.Fatalf("tampered: %d %q", code, errs)
	}
	if code, out, _ = runCtl(t, p, "", "status"); code != admin.ExitOK || !strings.Contains(out, "installed=1") {
		t.Fatalf("status: %d %q", code, out)
	}

	// Uninstall.
	if code, out, errs = runCtl(t, p, "", "app", "uninstall", lifePkg); code != admin.ExitOK || !strings.HasPrefix(out, "uninstalled "+lifePkg) {
		t.Fatalf("uninstall: %d %q %q", code, out, errs)
	}
	if code, out, _ = runCtl(t, p, "", "app", "list"); code != admin.ExitOK || out != "no apps installed\n" {
		t.Fatalf("list after uninstall: %d %q", code, out)
	}
	if code, _, errs = runCtl(t, p, "", "app", "uninstall", lifePkg); code != admin.ExitFailed || !strings.Contains(errs, "not installed") {
		t.Fatalf("second uninstall: %d %q", code, errs)
	}
}

func TestAppMethodsPermissions(t *testing.T) {
	e := startAppsEnv(t)
	k, _ := apps.GenerateKey()
	bundle := bundleFile(t, e.dir, 1, k)
	if code, _, errs := runCtl(t, e.names.Prefix, "", "app", "install", bundle); code != admin.ExitOK {
		t.Fatal(errs)
	}
	bin := apptest.Stage(t, "")
	tests := []struct {
		uid  int
		args []string
		code int
		want string
	}{
		{admin.ShellUID, []string{"app", "install", bundle}, admin.ExitFailed, "forbidden: app.install is for root only"},
		{admin.ShellUID, []string{"app", "uninstall", lifePkg}, admin.ExitFailed, "forbidden: app.uninstall is for root only"},
		{admin.ShellUID, []string{"app", "list"}, admin.ExitOK, lifePkg},
		{admin.ShellUID, []string{"app", "run", lifePkg, "--", "exit", "3"}, 3, "exiting with 3"},
		{10099, []string{"app", "run", lifePkg, "--", "id"}, admin.ExitFailed, "forbidden: app.run is for root|shell only"},
		{10555, []string{"app", "list"}, admin.ExitFailed, "closed the connection without answering"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.uid, tt.args), func(t *testing.T) {
			args := append([]string{"--socket-prefix", e.names.Prefix}, tt.args...)
			cmd := apptest.Command(tt.uid, bin, args, "ADMIN_TEST_CTL=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			all := stdout.String() + stderr.String()
			if code != tt.code || !strings.Contains(all, tt.want) {
				t.Fatalf("exit %d, want %d; output %q lacks %q", code, tt.code, all, tt.want)
			}
		})
	}
}

func TestAppMethodsWithoutSupervisor(t *testing.T) {
	testenv.NeedRoot(t)
	names := testNames(t)
	dir := t.TempDir()
	in, err := apps.OpenInstaller(filepath.Join(dir, "apps"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	table, _ := apps.OpenTable(in.Dir(), &apps.TableOptions{PollInterval: -1})
	defer table.Close()
	// Nobody listens on the launcher socket.
	srv := admin.NewServer(&admin.Options{Name: names.Admin(), Methods: Methods(table, launcher.NewClient(launcher.SocketName(names)))})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, _, errs := runCtl(t, names.Prefix, "", "app", "install", "/nonexistent.agentapp")
	if code != admin.ExitFailed || !strings.Contains(errs, "the supervisor is not running") {
		t.Fatalf("%d %q", code, errs)
	}
	if code, out, _ := runCtl(t, names.Prefix, "", "app", "list"); code != admin.ExitOK || out != "no apps installed\n" {
		t.Fatalf("list without supervisor: %d %q", code, out)
	}
}

func TestRunParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		ok      bool
		timeout time.Duration
	}{
		{[]string{"a.b", "--", "dump"}, true, launcher.DefaultRunTimeout},
		{[]string{"a.b", "--timeout", "5s", "--", "tool", "x", "--", "y"}, true, 5 * time.Second},
		{[]string{"--timeout=2m", "a.b", "--", "dump"}, true, 2 * time.Minute},
		{[]string{"a.b", "dump"}, false, 0},
		{[]string{"a.b", "--"}, false, 0},
		{[]string{"--", "dump"}, false, 0},
		{[]string{"a.b", "--timeout", "11m", "--", "dump"}, false, 0},
	}
	for _, tt := range tests {
		p, err := runParams(tt.args, nil)
		if (err == nil) != tt.ok {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if tt.ok {
			tp := p.(admin.TimeoutParams)
			if r := tp.Params.(runReq); time.Duration(r.TimeoutMs)*time.Millisecond != tt.timeout || r.Package != "a.b" {
				t.Errorf("%v: %+v", tt.args, r)
			}
		}
	}
	p, _ := runParams([]string{"a.b", "--", "tool", "x", "--", "y"}, nil)
	if got := p.(admin.TimeoutParams).Params.(runReq).Args; strings.Join(got, " ") != "tool x -- y" {
		t.Errorf("args after the first -- %q", got)
	}
}
