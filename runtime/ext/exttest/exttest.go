// Package exttest runs the extension-host stack for tests, with every
// part real: a root installer and package table, the supervisor's
// launcher (starting provider apps under their own uids), `agentosd
// ext` as a child process (the test binary re-executed), serve's broker
// and an admin server on a private socket name. It needs root (app uids
// are real) and skips without it.
//
// A test binary that uses it calls MaybeRunExt first thing in TestMain:
//
//	func TestMain(m *testing.M) {
//		exttest.MaybeRunExt()
//		os.Exit(m.Run())
//	}
package exttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/appadmin"
	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/ext/host"
	"github.com/agentoslab/agentlab/runtime/transport"
)

const extEnv = "EXTTEST_RUN_EXT"

// MaybeRunExt runs `agentosd ext` and exits when the test binary was
// started as the harness's extension host; otherwise it returns.
func MaybeRunExt() {
	if os.Getenv(extEnv) != "1" || len(os.Args) < 2 || os.Args[1] != "ext" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := host.Main(ctx, os.Args[2:], os.Stderr)
	stop()
	os.Exit(code)
}

// Options vary a Harness.
type Options struct {
	// ExtFlags are extra `agentosd ext` flags (--idle-timeout 2s, …).
	ExtFlags []string
	// CallTimeout is the broker's tool-call timeout (120 s).
	CallTimeout time.Duration
	// Sessions are caller-supplied MCP servers for the broker.
	Sessions broker.SessionTools
	// ACI are ACI capabilities for the broker.
	ACI broker.ACITools
	// Log receives the extension host's and the launcher's logs; nil
	// discards them.
	Log io.Writer
}

// Harness is one running stack.
type Harness struct {
	Root      string
	AppsDir   string
	DataDir   string
	Names     transport.Names
	Installer *apps.Installer
	Table     *apps.Table
	Launcher  *launcher.Server
	Broker    *broker.Broker
	Admin     *admin.Server
}

var prefixSeq atomic.Int64

// New starts a stack; everything stops when the test ends.
func New(t testing.TB, o Options) *Harness {
	t.Helper()
	testenv.NeedRoot(t)
	root := apptest.OpenDir(t)
	h := &Harness{
		Root:    root,
		AppsDir: filepath.Join(root, "apps"),
		DataDir: filepath.Join(root, "runtime"),
		Names:   transport.Names{Prefix: fmt.Sprintf("exttest%d-%d-", os.Getpid(), prefixSeq.Add(1))},
	}
	if err := os.MkdirAll(h.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	logger := newLogger(logw)
	in, err := apps.OpenInstaller(h.AppsDir, &apps.InstallerOptions{FirstUID: 30000 + int(prefixSeq.Load()%50)*100, LastUID: 39999, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	h.Installer = in
	ls, err := launcher.NewServer(&launcher.Options{Installer: in, Names: h.Names, RuntimeUID: os.Getuid(), Logger: logger,
		StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := ls.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	h.Launcher = ls
	table, err := apps.OpenTable(h.AppsDir, &apps.TableOptions{PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	h.Table = table

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bo := broker.Options{
		Names: h.Names, DataDir: h.DataDir, AppsDir: h.AppsDir,
		ExtFlags:       o.ExtFlags,
		ExtStderr:      logw,
		RestartBackoff: 200 * time.Millisecond,
		CallTimeout:    o.CallTimeout,
		Sessions:       o.Sessions,
		ACI:            o.ACI,
		Logger:         logger,
	}
	bo.ExtCommand = func() (*exec.Cmd, error) {
		cmd := exec.Command(self, bo.ExtArgs()...)
		cmd.Env = append(os.Environ(), extEnv+"=1")
		return cmd, nil
	}
	b := broker.New(bo)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	h.Broker = b
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if !b.WaitLink(wctx) {
		t.Fatal("the extension host did not connect")
	}

	srv := admin.NewServer(&admin.Options{Name: h.Names.Admin(), Logger: logger,
		Methods: append(broker.AdminMethods(b), appadmin.Methods(table, launcher.NewClient(launcher.SocketName(h.Names)))...)})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h.Admin = srv
	return h
}

// Install installs a bundle and waits until the extension host has read
// it (a rescan).
func (h *Harness) Install(t testing.TB, bundle []byte) apps.Package {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.agentapp")
	if err := os.WriteFile(path, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := h.Installer.Install(context.Background(), path)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	h.Table.Reload()
	h.Rescan(t)
	return res.Package
}

// Uninstall removes a package (its processes first) and rescans.
func (h *Harness) Uninstall(t testing.TB, pkg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	launcher.NewClient(launcher.SocketName(h.Names)).Stop(ctx, pkg, "")
	if _, err := h.Installer.Uninstall(ctx, pkg); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	h.Table.Reload()
	h.Rescan(t)
}

// Rescan makes the extension host read the installed plugins now (the
// table watch would do it within its poll interval).
func (h *Harness) Rescan(t testing.TB) {
	t.Helper()
	if _, err := h.Call("plugins.rescan", nil); err != nil {
		t.Fatalf("rescan: %v", err)
	}
}

// Call calls an admin method as the owner (this process's uid).
func (h *Harness) Call(method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := admin.Dial(ctx, h.Names.Admin())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.CallRaw(ctx, method, params)
}

// MustCall is Call that fails the test on error.
func (h *Harness) MustCall(t testing.TB, method string, params any, result any) {
	t.Helper()
	raw, err := h.Call(method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			t.Fatalf("%s: %v in %s", method, err, raw)
		}
	}
}

// Ctl runs `agentosd ctl ARGS… --json` in process against the harness.
func (h *Harness) Ctl(args ...string) (code int, stdout, stderr string) {
	var out, errb strings.Builder
	full := append([]string{"--socket-prefix", h.Names.Prefix}, args...)
	verbs := append(append(admin.Verbs(), broker.CtlVerbs()...), appadmin.Verbs()...)
	code = admin.Ctl(context.Background(), verbs, full, admin.CtlIO{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
