package launcher

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

var testappBin []byte // the test app, built once

func TestMain(m *testing.M) {
	if os.Getenv("LAUNCHER_TEST_PEER") == "1" {
		// A runtime-side peer under another uid: list and report.
		_, err := NewClient(os.Args[1]).List(context.Background())
		fmt.Println(err == nil)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "launcher-test-")
	if err != nil {
		panic(err)
	}
	bin := filepath.Join(dir, "testapp")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/agentoslab/agentlab/runtime/apps/internal/testapp").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build testapp: %v\n%s", err, out)
		os.Exit(1)
	}
	testappBin, _ = os.ReadFile(bin)
	os.RemoveAll(dir)
	os.Exit(m.Run())
}

const testPkg = "org.agentos.test.launch"

func testBundle(t testing.TB, versionCode int, key ed25519.PrivateKey) string {
	return testBundleWith(t, versionCode, key, "")
}

// testBundleWith adds extra app.json members (`,"permissions":[…]`).
func testBundleWith(t testing.TB, versionCode int, key ed25519.PrivateKey, extra string) string {
	t.Helper()
	app := fmt.Sprintf(`{"package":%q,"label":"Launch test","versionCode":%d,"binary":"testapp",
"services":[{"name":"Main","kind":"mcp","server":"main"},{"name":"Dies","kind":"mcp","server":"dies"},
{"name":"Mute","kind":"mcp","server":"mute"},{"name":"Stubborn","kind":"mcp","server":"stubborn"},
{"name":"Aci","kind":"aci","server":"aci"}],
"commands":["id","env","pwd","flood","exit","sleep","groups"]%s}`, testPkg, versionCode, extra)
	src := fstest.MapFS{
		"app.json": {Data: []byte(app)},
		apps.BinaryPath(apps.HostABI(), "testapp"): {Data: testappBin},
	}
	var buf bytes.Buffer
	if _, err := apps.Pack(context.Background(), src, key, &buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.agentapp", versionCode))
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func key(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

type env struct {
	t      testing.TB
	names  transport.Names
	in     *apps.Installer
	srv    *Server
	client *Client
	pkg    apps.Package
}

// newEnv installs the test app into a fresh apps directory (reachable by
// app uids) and starts a launcher whose runtime uid is root (the test).
func newEnv(t testing.TB, mod func(*Options)) *env {
	t.Helper()
	testenv.NeedRoot(t)
	var b [4]byte
	rand.Read(b[:])
	names := transport.Names{Prefix: "l" + hex.EncodeToString(b[:]) + "-"}
	root := apptest.OpenDir(t)
	in, err := apps.OpenInstaller(filepath.Join(root, "apps"), &apps.InstallerOptions{
		AndroidPackagesList: filepath.Join(root, "none"), PasswdFile: filepath.Join(root, "none"), FirstUID: 10400, LastUID: 10499})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	o := &Options{Installer: in, Names: names, StartTimeout: 5 * time.Second, StopGrace: 300 * time.Millisecond,
		Environ: []string{"TZ=Asia/Shanghai", "SECRET_OF_THE_SUPERVISOR=1", "ANDROID_DATA=/data"}}
	if mod != nil {
		mod(o)
	}
	srv, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	e := &env{t: t, names: names, in: in, srv: srv, client: NewClient(srv.Socket())}
	res, err := srv.Install(context.Background(), testBundle(t, 1, key(1)))
	if err != nil {
		t.Fatal(err)
	}
	e.pkg = res.Package
	return e
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartServiceAsAppUID(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	events, err := e.client.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.client.Start(ctx, testPkg, "main")
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != e.pkg.UID || p.Socket != e.names.App(testPkg, "main") || p.PID <= 0 {
		t.Fatalf("proc %+v", p)
	}
	// The runtime side: dial the app's socket and check who listens.
	c, err := transport.Dial(ctx, e.names.App(testPkg, "main"))
	if err != nil {
		t.Fatal(err)
	}
	cred, err := transport.PeerCred(c)
	if err != nil {
		t.Fatal(err)
	}
	if cred.UID != e.pkg.UID {
		t.Fatalf("listener uid %d, package uid %d", cred.UID, e.pkg.UID)
	}
	line, _ := bufio.NewReader(c).ReadBytes('\n')
	c.Close()
	var hello struct {
		UID     int
		Package string
		Cwd     string
	}
	json.Unmarshal(line, &hello)
	if hello.UID != e.pkg.UID || hello.Package != testPkg || hello.Cwd != e.pkg.DataDir {
		t.Fatalf("app says %s", line)
	}
	// A second start is the same process.
	p2, err := e.client.Start(ctx, testPkg, "main")
	if err != nil || p2.PID != p.PID {
		t.Fatalf("second start: %+v %v", p2, err)
	}
	if ps, _ := e.client.List(ctx); len(ps) != 1 || ps[0].PID != p.PID {
		t.Fatalf("list %+v", ps)
	}
	// Its output went to its log, owned by its uid.
	logPath := filepath.Join(e.pkg.DataDir, LogName("main"))
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), fmt.Sprintf("serving main as uid %d", e.pkg.UID)) {
		t.Fatalf("log %q", b)
	}
	if fi, err := os.Stat(logPath); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != e.pkg.UID {
		t.Fatalf("log owner: %v", err)
	}
	if n, err := e.client.Stop(ctx, testPkg, ""); err != nil || n != 1 {
		t.Fatalf("stop: %d %v", n, err)
	}
	want := []struct {
		kind      EventKind
		requested bool
	}{{EventStarted, false}, {EventExited, true}}
	for _, w := range want {
		select {
		case ev := <-events:
			if ev.Kind != w.kind || ev.PID != p.PID || ev.Requested != w.requested {
				t.Fatalf("event %+v, want %v requested=%v", ev, w.kind, w.requested)
			}
		case <-ctx.Done():
			t.Fatalf("no %s event", w.kind)
		}
	}
	if ps, _ := e.client.List(ctx); len(ps) != 0 {
		t.Fatalf("still listed after stop: %+v", ps)
	}
}

// An ACI service starts like an MCP server, as the app's uid, but on its
// ACI socket ("@aci.<package>.<server>" after the runtime's prefix).
func TestStartACIService(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	p, err := e.client.Start(ctx, testPkg, "aci")
	if err != nil {
		t.Fatal(err)
	}
	if p.Socket != e.names.ACI(testPkg, "aci") || p.UID != e.pkg.UID {
		t.Fatalf("proc %+v, want socket %s", p, e.names.ACI(testPkg, "aci"))
	}
	c, err := transport.Dial(ctx, e.names.ACI(testPkg, "aci"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if cred, err := transport.PeerCred(c); err != nil || cred.UID != e.pkg.UID {
		t.Fatalf("listener %+v %v, package uid %d", cred, err, e.pkg.UID)
	}
	if _, err := transport.Dial(ctx, e.names.App(testPkg, "aci")); err == nil {
		t.Fatal("an ACI service listens on the MCP name too")
	}
}

func TestDeathIsReported(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	events, _ := e.client.Watch(ctx)
	p, err := e.client.Start(ctx, testPkg, "main")
	if err != nil {
		t.Fatal(err)
	}
	<-events                             // started
	syscall.Kill(p.PID, syscall.SIGKILL) // killed from outside
	select {
	case ev := <-events:
		if ev.Kind != EventExited || ev.Requested || !strings.Contains(ev.Status, "killed") {
			t.Fatalf("event %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("death not reported")
	}
	// The next start is a new process.
	p2, err := e.client.Start(ctx, testPkg, "main")
	if err != nil || p2.PID == p.PID {
		t.Fatalf("restart: %+v %v", p2, err)
	}
}

// TestStartRightAfterDeath: a bind that arrives while the dead process
// is not reaped yet (the broker calls again the moment a provider's
// connection drops) starts a new process instead of reporting the old
// one's exit. Several rounds, because the window is short.
func TestStartRightAfterDeath(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	p, err := e.client.Start(ctx, testPkg, "main")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		syscall.Kill(p.PID, syscall.SIGKILL)
		// Dead as the broker sees it: its socket no longer answers.
		for {
			c, err := transport.Dial(ctx, p.Socket)
			if err != nil {
				break
			}
			c.Close()
		}
		p2, err := e.client.Start(ctx, testPkg, "main")
		if err != nil {
			t.Fatalf("round %d: start right after the death: %v", round, err)
		}
		if p2.PID == p.PID {
			t.Fatalf("round %d: got the dead process %d back", round, p.PID)
		}
		p = p2
	}
}

func TestStartFailures(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.StartTimeout = 500 * time.Millisecond })
	ctx := ctxT(t)
	squat, err := transport.Listen(e.names.App(testPkg, "stubborn"))
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	tests := []struct {
		pkg, server string
		reason      string
		code        errcode.Code
	}{
		{testPkg, "dies", "exited", errcode.ToolUnavailable},
		{testPkg, "mute", "not_listening", errcode.ToolUnavailable},
		{testPkg, "stubborn", "socket_taken", errcode.ToolUnavailable},
		{testPkg, "nope", "no_such_service", errcode.InvalidParams},
		{"org.not.installed", "main", "not_installed", errcode.InvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.server+"/"+tt.reason, func(t *testing.T) {
			_, err := e.client.Start(ctx, tt.pkg, tt.server)
			if Reason(err) != tt.reason || !errors.Is(err, tt.code) {
				t.Fatalf("err = %v (reason %q), want %s %s", err, Reason(err), tt.code, tt.reason)
			}
		})
	}
	// Nothing is left running: the mute server was killed at the timeout.
	if ps := e.srv.List(); len(ps) != 0 {
		t.Fatalf("left running: %+v", ps)
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	if _, err := e.client.Start(ctx, testPkg, "stubborn"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if n, err := e.client.Stop(ctx, testPkg, "stubborn"); err != nil || n != 1 {
		t.Fatalf("stop: %d %v", n, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("stopped in %v: SIGTERM was not ignored?", d)
	}
}

func TestRun(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxOutputBytes = 1 << 20 })
	ctx := ctxT(t)
	run := func(timeout time.Duration, args ...string) *RunResult {
		t.Helper()
		r, err := e.client.Run(ctx, testPkg, args, timeout)
		if err != nil {
			t.Fatalf("run %v: %v", args, err)
		}
		return r
	}
	if r := run(0, "id"); strings.TrimSpace(string(r.Stdout)) != strconv.Itoa(e.pkg.UID) || r.ExitCode != 0 {
		t.Fatalf("id -u printed %q (exit %d), want %d", r.Stdout, r.ExitCode, e.pkg.UID)
	}
	if r := run(0, "pwd"); strings.TrimSpace(string(r.Stdout)) != e.pkg.DataDir {
		t.Fatalf("pwd %q", r.Stdout)
	}
	r := run(0, "env")
	want := strings.Join([]string{
		"AGENTOS_APP_DATA=" + e.pkg.DataDir, "AGENTOS_CALLER_SOCKET=" + e.names.Caller(), "AGENTOS_PACKAGE=" + testPkg, "AGENTOS_RUNTIME_UID=0", "AGENTOS_SYSTEM_DATA=" + e.in.SystemDir(), "ANDROID_DATA=/data",
		"HOME=" + e.pkg.DataDir, "PATH=" + defaultPath, "TZ=Asia/Shanghai"}, "\n") + "\n"
	if string(r.Stdout) != want {
		t.Fatalf("environment:\n%s\nwant:\n%s", r.Stdout, want)
	}
	if fi, err := os.Stat(e.in.SystemDir()); err != nil || fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky != 0 {
		t.Fatalf("system dir %v %v: every app uid must create and replace files there", fi, err)
	}
	if r := run(0, "exit", "7"); r.ExitCode != 7 || string(r.Stdout) != "exiting with 7\n" {
		t.Fatalf("exit 7: %+v", r)
	}
	r = run(0, "flood", strconv.Itoa(3<<20))
	if len(r.Stdout) != 1<<20 || r.StdoutDropped != 2<<20 || len(r.Stderr) != 1<<20 || r.StderrDropped != 2<<20 {
		t.Fatalf("flood: %d+%d, %d+%d", len(r.Stdout), r.StdoutDropped, len(r.Stderr), r.StderrDropped)
	}
	r = run(300*time.Millisecond, "sleep")
	if !r.TimedOut || r.ExitCode != 137 {
		t.Fatalf("sleep: %+v", r)
	}
	for _, args := range [][]string{{"serve", "--server", "main"}, {"rm"}, nil} {
		if _, err := e.client.Run(ctx, testPkg, args, 0); Reason(err) != "no_such_command" {
			t.Fatalf("run %v: %v", args, err)
		}
	}
	if _, err := e.client.Run(ctx, testPkg, []string{"exit", strings.Repeat("x", maxArgBytes+1)}, 0); Reason(err) != "bad_args" {
		t.Fatalf("long arg: %v", err)
	}
}

func TestUpgradeAndUninstallStopProcesses(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	events, _ := e.client.Watch(ctx)
	p, err := e.client.Start(ctx, testPkg, "main")
	if err != nil {
		t.Fatal(err)
	}
	next := func(kind EventKind) Event {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == kind {
					return ev
				}
			case <-ctx.Done():
				t.Fatalf("no %s event", kind)
			}
		}
	}
	next(EventStarted)
	res, err := e.client.Install(ctx, testBundle(t, 2, key(2)))
	if err != nil || res.Event.Kind != apps.SignatureChanged {
		t.Fatalf("upgrade: %+v %v", res, err)
	}
	if ev := next(EventExited); ev.PID != p.PID || !ev.Requested {
		t.Fatalf("old version still running: %+v", ev)
	}
	if ev := next(EventPackage); ev.Change == nil || ev.Change.Kind != apps.SignatureChanged {
		t.Fatalf("package event %+v", ev)
	}
	if _, err := e.client.Install(ctx, testBundle(t, 1, key(2))); Reason(err) != "downgrade" {
		t.Fatalf("downgrade: %v", err)
	}
	if _, err := e.client.Install(ctx, "relative.agentapp"); Reason(err) != "bad_path" {
		t.Fatalf("relative path: %v", err)
	}
	p, err = e.client.Start(ctx, testPkg, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Uninstall(ctx, testPkg); err != nil {
		t.Fatal(err)
	}
	if ev := next(EventExited); ev.PID != p.PID {
		t.Fatalf("uninstall did not stop the process: %+v", ev)
	}
	if _, err := os.Stat(e.pkg.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("data dir left")
	}
	if _, err := e.client.Uninstall(ctx, testPkg); Reason(err) != "not_installed" {
		t.Fatalf("second uninstall: %v", err)
	}
}

func TestOnlyTheRuntimeUID(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.RuntimeUID = 10399 })
	ctx := ctxT(t)
	if _, err := e.client.List(ctx); !errors.Is(err, ErrRefused) {
		t.Fatalf("root (not the runtime) was served: %v", err)
	}
	bin := apptest.Stage(t, "")
	for uid, want := range map[int]string{10399: "true", e.pkg.UID: "false"} {
		out, err := apptest.Command(uid, bin, []string{e.srv.Socket()}, "LAUNCHER_TEST_PEER=1").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("uid %d served=%s, want %s", uid, got, want)
		}
	}
}

func TestCloseStopsEverything(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	p, err := e.client.Start(ctx, testPkg, "stubborn")
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Close()
	if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process alive after Close: %v", err)
	}
	if _, err := e.client.List(ctx); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("after Close: %v", err)
	}
}

// An app gets the inet group (Android's network permission) only when
// app.json declares "permissions": ["network"]: its services and its
// one-shot commands alike.
func TestNetworkPermissionGivesInet(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	groupsOf := func(pid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Groups:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return "?"
	}
	run := func() string {
		r, err := e.client.Run(ctx, testPkg, []string{"groups"}, 0)
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("groups: %+v %v", r, err)
		}
		return strings.TrimSpace(string(r.Stdout))
	}
	if got := run(); got != "[]" {
		t.Errorf("undeclared app's command has groups %s, want none", got)
	}
	p, err := e.client.Start(ctx, testPkg, "main")
	if err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(p.PID); got != "" {
		t.Errorf("undeclared app's service has groups %q, want none", got)
	}
	e.client.Stop(ctx, testPkg, "main")

	res, err := e.srv.Install(ctx, testBundleWith(t, 2, key(1), `,"permissions":["network"]`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Package.UsesNetwork() {
		t.Fatalf("installed package lost its permission: %+v", res.Package)
	}
	if got := run(); got != "[3003]" {
		t.Errorf("declared app's command has groups %s, want [3003]", got)
	}
	p, err = e.client.Start(ctx, testPkg, "main")
	if err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(p.PID); got != "3003" {
		t.Errorf("declared app's service has groups %q, want 3003", got)
	}
}
