package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

// agentosd is built once per test binary, on first use.
var (
	agentosdOnce sync.Once
	agentosdBin  string
	agentosdErr  error
)

func agentosd(t *testing.T) string {
	t.Helper()
	agentosdOnce.Do(func() {
		out := filepath.Join(buildDir, "agentosd")
		b, err := exec.Command("go", "build", "-o", out, "github.com/agentoslab/agentlab/runtime/cmd/agentosd").CombinedOutput()
		if err != nil {
			agentosdErr = fmt.Errorf("build agentosd: %v\n%s", err, b)
			return
		}
		agentosdBin = out
	})
	if agentosdErr != nil {
		t.Fatal(agentosdErr)
	}
	return agentosdBin
}

// device is one runtime as on a phone: `agentosd supervise` (root) with
// its own root directory, socket-name prefix, runtime uid and app uids.
type device struct {
	t      *testing.T
	bin    string
	prefix string
	names  transport.Names
	log    *tailBuffer
	sup    *exec.Cmd
	exited chan error
}

// Each device of a test binary gets its own uids: runtime base+N*100, apps
// base+N*100+1…+99.
const uidBase = 42000

var deviceSeq atomic.Int32

// startDevice starts a supervisor and waits until the runtime answers
// the owner. Everything stops when the test ends.
func startDevice(t *testing.T) *device {
	t.Helper()
	testenv.NeedRoot(t)
	if testing.Short() {
		t.Skip("builds and runs the runtime and the sample apps; skipped with -short")
	}
	n := int(deviceSeq.Add(1))
	bin := agentosd(t)
	root := filepath.Join(apptest.OpenDir(t), "root")
	runtimeUID := uidBase + n*100
	d := &device{t: t, bin: bin, prefix: fmt.Sprintf("sae%d-%d-", os.Getpid(), n), log: &tailBuffer{max: 256 << 10}, exited: make(chan error, 1)}
	d.names = transport.Names{Prefix: d.prefix}
	d.sup = exec.Command(bin, "supervise", "--root", root, "--getprop", "-", "--runtime-uid", strconv.Itoa(runtimeUID),
		"--socket-prefix", d.prefix, "--uid-range", fmt.Sprintf("%d-%d", runtimeUID+1, runtimeUID+99),
		"--poll-idle", "100ms", "--log-stderr")
	// The supervisor passes TZ to the runtime and the apps: the device's zone.
	d.sup.Env = append(os.Environ(), "TZ=Asia/Shanghai")
	d.sup.Stdout, d.sup.Stderr = d.log, d.log
	if err := d.sup.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.sup.Wait() }()
	t.Cleanup(d.stop)
	d.waitFor(60*time.Second, "the runtime answers ctl status", func() bool {
		return d.ctl("status", "--json").code == 0
	})
	return d
}

// stop sends the supervisor SIGTERM (it stops the runtime and the apps)
// and shows its log when the test failed.
func (d *device) stop() {
	d.sup.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.sup.Process.Kill()
		<-d.exited
	}
	if d.t.Failed() {
		d.t.Logf("supervisor and runtime log (last %d KiB):\n%s", d.log.max>>10, d.log.String())
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// ctl runs `agentosd ctl` as root (the owner).
func (d *device) ctl(args ...string) result {
	d.t.Helper()
	return d.ctlIn("", args...)
}

func (d *device) ctlIn(stdin string, args ...string) result {
	d.t.Helper()
	cmd := exec.Command(d.bin, append([]string{"ctl", "--socket-prefix", d.prefix}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("ctl %v: %v", args, err)
	}
	return r
}

// mustCtl runs ctl and fails the test unless it exits 0.
func (d *device) mustCtl(args ...string) string {
	d.t.Helper()
	r := d.ctl(args...)
	if r.code != 0 {
		d.t.Fatalf("ctl %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// ctlJSON runs ctl with --json and decodes its output into v.
func (d *device) ctlJSON(v any, args ...string) {
	d.t.Helper()
	out := d.mustCtl(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		d.t.Fatalf("ctl %v printed %q: %v", args, out, err)
	}
}

// appRun runs one of pkg's debug commands as its uid and decodes its
// one JSON document; code is the command's exit code.
func (d *device) appRun(timeout time.Duration, pkg string, args ...string) (code int, doc map[string]any) {
	d.t.Helper()
	r := d.ctl(append([]string{"app", "run", pkg, "--timeout", timeout.String(), "--"}, args...)...)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		d.t.Fatalf("app run %s %v: exit %d, stdout %q: %v\nstderr: %s", pkg, args, r.code, r.stdout, err, r.stderr)
	}
	return r.code, doc
}

// mustRun is appRun that fails the test unless the command exits 0.
func (d *device) mustRun(pkg string, args ...string) map[string]any {
	d.t.Helper()
	code, doc := d.appRun(time.Minute, pkg, args...)
	if code != 0 {
		d.t.Fatalf("app run %s %v: exit %d: %v", pkg, args, code, doc)
	}
	return doc
}

// waitFor polls cond until it holds or timeout passes (then the test
// fails naming what), and fails at once if the supervisor exited.
func (d *device) waitFor(timeout time.Duration, what string, cond func() bool) {
	d.t.Helper()
	var exited bool
	var exitErr error
	require.Eventually(d.t, func() bool {
		if cond() {
			return true
		}
		select {
		case exitErr = <-d.exited:
			d.exited <- exitErr
			exited = true // reported below, without waiting out the timeout
			return true
		default:
			return false
		}
	}, timeout, 50*time.Millisecond, "waiting until %s", what)
	if exited {
		d.t.Fatalf("the supervisor exited (%v) while waiting until %s", exitErr, what)
	}
}

// install packs the named sample apps and installs them with ctl.
func (d *device) install(names ...string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bs, err := bundles.All(ctx, names...)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, b := range bs {
		if out := d.mustCtl("app", "install", b.Path); !strings.HasPrefix(out, "installed "+b.Manifest.App.Package) {
			d.t.Fatalf("install %s: %s", b.App, out)
		}
	}
}

// pluginView is what the test reads of `ctl plugins list --json`.
type pluginView struct {
	ID      string `json:"id"`
	Package string `json:"package"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	Enabled bool   `json:"enabled"`
}

// enablePlugins waits until the extension host lists the plugins of the
// named packages and enables each (new plugins start disabled).
func (d *device) enablePlugins(pkgs ...string) map[string]pluginView {
	d.t.Helper()
	byPkg := map[string]pluginView{}
	d.waitFor(30*time.Second, fmt.Sprintf("the extension host lists the plugins of %v", pkgs), func() bool {
		var list []pluginView
		r := d.ctl("plugins", "list", "--json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil {
			return false
		}
		for _, p := range list {
			byPkg[p.Package] = p
		}
		for _, pkg := range pkgs {
			if _, ok := byPkg[pkg]; !ok {
				return false
			}
		}
		return true
	})
	for _, pkg := range pkgs {
		d.mustCtl("plugins", "enable", byPkg[pkg].ID)
	}
	return byPkg
}

// catalogEntry is what the test reads of `ctl catalog --json`.
type catalogEntry struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Risk     string `json:"risk"`
	Enabled  bool   `json:"enabled"`
	PluginID string `json:"pluginId"`
	Source   struct {
		Plugin, Server, Tool string
	} `json:"source"`
}

// catalog waits until the catalog holds name (enabled), then returns it.
func (d *device) catalog(name string) map[string]catalogEntry {
	d.t.Helper()
	var cat struct {
		Tools []catalogEntry `json:"tools"`
	}
	d.waitFor(60*time.Second, name+" is in the catalog and enabled", func() bool {
		r := d.ctl("catalog", "--wait", name, "--timeout", "5s", "--json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &cat) != nil {
			return false
		}
		for _, e := range cat.Tools {
			if e.Name == name && e.Enabled {
				return true
			}
		}
		return false
	})
	out := map[string]catalogEntry{}
	for _, e := range cat.Tools {
		out[e.Name] = e
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append([]byte(nil), w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// desktop is an ACP connection over the runtime's desktop socket, paired
// with a code from `ctl desktop enable` (as the lab's acp-bridge does),
// spoken as plain JSON-RPC lines.
type desktop struct {
	t      *testing.T
	c      net.Conn
	r      *bufio.Reader
	nextID int
}

func (d *device) pairDesktop() *desktop {
	d.t.Helper()
	var code struct{ Code string }
	d.ctlJSON(&code, "desktop", "enable")
	c, err := transport.Dial(context.Background(), d.names.ACP())
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { c.Close() })
	a := &desktop{t: d.t, c: c, r: bufio.NewReaderSize(c, transport.MaxLineChars*4), nextID: 1}
	var pair struct {
		Token string `json:"token"`
	}
	a.send(0, "_org.agentos/pair", map[string]any{"code": code.Code})
	if err := json.Unmarshal(a.await(0, nil), &pair); err != nil || pair.Token == "" {
		d.t.Fatalf("pairing answered %+v (%v)", pair, err)
	}
	a.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, nil)
	return a
}

func (a *desktop) send(id int, method string, params any) {
	a.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := a.c.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("send %s: %v", method, err)
	}
}

// call sends a request and returns its result; notifications that arrive
// meanwhile go to onNote (nil drops them).
func (a *desktop) call(method string, params any, onNote func(method string, params json.RawMessage)) json.RawMessage {
	a.t.Helper()
	id := a.nextID
	a.nextID++
	a.send(id, method, params)
	return a.await(id, onNote)
}

func (a *desktop) await(id int, onNote func(string, json.RawMessage)) json.RawMessage {
	a.t.Helper()
	a.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for {
		line, err := a.r.ReadBytes('\n')
		if err != nil {
			a.t.Fatalf("waiting for the answer to request %d: %v", id, err)
		}
		var m struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Params json.RawMessage  `json:"params"`
			Result json.RawMessage  `json:"result"`
			Error  json.RawMessage  `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			a.t.Fatalf("not JSON-RPC: %q", line)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			// A request from the agent: this client offers no methods.
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
			a.c.Write(append(b, '\n'))
		case m.Method != "":
			if onNote != nil {
				onNote(m.Method, m.Params)
			}
		case m.ID != nil && string(*m.ID) == strconv.Itoa(id):
			if len(m.Error) > 0 {
				a.t.Fatalf("request %d failed: %s", id, m.Error)
			}
			return m.Result
		}
	}
}
