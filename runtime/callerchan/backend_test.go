package callerchan_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backend is a runtime the third-party cases run against: in process
// (runtimeEnv) or the real agentosd serve binary (binaryEnv). Everything
// the owner does goes through it; apps are helper processes either way.
type backend interface {
	// install puts an app into the package table and returns it as
	// installed (the real installer allocates the uid and the digest
	// comes from the signer). Apps with the same shared name share a uid.
	install(a callers.App, shared string) callers.App
	uninstall(pkg string)
	// resign installs a new version of a signed by another key.
	resign(a callers.App) callers.App
	startApp(uid int) *app
	snapshot() view
	answer(requestID string, allow bool) bool
	set(pkg string, s callers.State) error
	// preAllow has app a ask once and the owner allow it.
	preAllow(a callers.App)
	// slotFree reports that the app has no prompt in progress (quota).
	slotFree(a callers.App) bool
	logs() string
	storeBytes() []byte
	// testPlugin makes the test plugin's echo and stats (mcptest, spec
	// §9.6) callable, every call asked through consent answered by mode
	// (AutoOff: the cards wait for the owner).
	testPlugin(mode consent.AutoMode)
	// pendingCards are the consent cards waiting for the owner.
	pendingCards() []consent.View
	// answerCard answers a pending card as the owner.
	answerCard(id string, c consent.Choice) bool
}

// errNotFound is agentos.acp.not_found from either backend.
var errNotFound = errors.New("not found")

// view is the owner's `callers list`.
type view struct {
	Callers          []callers.Item       `json:"callers"`
	Cards            []callers.Card       `json:"cards"`
	Channels         callerchan.Stats     `json:"channels"`
	Revocations      []callers.Revocation `json:"revocations"`
	SignatureChanged map[string]bool      `json:"signatureChanged"`
}

func (v view) item(pkg string) (callers.Item, bool) {
	for _, it := range v.Callers {
		if it.PackageName == pkg {
			return it, true
		}
	}
	return callers.Item{}, false
}

// --- in process ---

func (r *runtimeEnv) install(a callers.App, shared string) callers.App {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pkgs[a.UID] = append(r.pkgs[a.UID], a)
	return a
}

func (r *runtimeEnv) uninstall(pkg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, list := range r.pkgs {
		var keep []callers.App
		for _, a := range list {
			if a.Package != pkg {
				keep = append(keep, a)
			}
		}
		r.pkgs[uid] = keep
	}
}

func (r *runtimeEnv) resign(a callers.App) callers.App {
	b := a
	b.SigningDigest = digestOf(0x99)
	r.mu.Lock()
	r.pkgs[a.UID] = []callers.App{b}
	r.mu.Unlock()
	r.reg.Reinstalled(a.Package, b.SigningDigest)
	return b
}

func (r *runtimeEnv) snapshot() view {
	s := r.reg.List()
	return view{Callers: s.Callers, Cards: s.Cards, Channels: r.srv.Stats(), Revocations: s.Revocations, SignatureChanged: s.SignatureChanged}
}

func (r *runtimeEnv) answer(id string, allow bool) bool {
	ok, _ := r.reg.Answer(id, allow)
	return ok
}

func (r *runtimeEnv) set(pkg string, s callers.State) error {
	err := r.reg.Set(context.Background(), pkg, s)
	if errors.Is(err, callers.ErrNotFound) {
		return errNotFound
	}
	return err
}

func (r *runtimeEnv) preAllow(a callers.App) { preAllowInProcess(r.t, r, a) }

func (r *runtimeEnv) slotFree(a callers.App) bool {
	return r.quota.Usage("uid:"+strconv.Itoa(a.UID)).Active == 0
}

func (r *runtimeEnv) logs() string { return r.logBuf.String() }

// testPlugin: the in-process tools are always there; only the consent
// mode changes.
func (r *runtimeEnv) testPlugin(mode consent.AutoMode) { r.co.SetMode(mode) }

func (r *runtimeEnv) pendingCards() []consent.View { return r.co.Pending() }

func (r *runtimeEnv) answerCard(id string, c consent.Choice) bool { return r.co.Respond(id, c) }

func (r *runtimeEnv) storeBytes() []byte {
	db, _ := os.ReadFile(r.dbPath)
	wal, _ := os.ReadFile(r.dbPath + "-wal")
	return append(db, wal...)
}

// --- the real binary ---

// buildAgentosd is agentosd as shipped (with the extension host), built
// once per test binary.
func buildAgentosd(t testing.TB) string {
	t.Helper()
	return testbin.Path(t, "github.com/agentoslab/agentlab/runtime/cmd/agentosd")
}

// testPluginID is mcptest's plugin id (spec §9.6).
const testPluginID = mcptest.Package + "/agent-plugin"

// binaryUIDs hands out runtime uids and app uid ranges per runtime.
var binaryUIDs = struct {
	sync.Mutex
	next int
}{next: 0}

type binaryEnv struct {
	t      testing.TB
	root   string
	data   string
	names  transport.Names
	in     *apps.Installer
	adm    *admin.Client
	stderr *syncbuf.Buffer
	// runtimeUID is serve's uid, the only peer the launcher admits.
	runtimeUID int

	mu       sync.Mutex
	keys     map[string]ed25519.PrivateKey // by signer label (the app's digest in the case)
	versions map[string]int64
}

// newBinaryRuntime starts agentosd serve under its own uid, with a root
// holding the package table, the scripted model, and cfg's timings.
func newBinaryRuntime(t testing.TB, cfg callers.Config) *binaryEnv {
	t.Helper()
	bin := buildAgentosd(t)
	binaryUIDs.Lock()
	n := binaryUIDs.next
	binaryUIDs.next++
	binaryUIDs.Unlock()
	runtimeUID := 19900 + n
	root, err := os.MkdirTemp("", "callerchan-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	e := &binaryEnv{t: t, root: root, data: filepath.Join(root, "data"), stderr: &syncbuf.Buffer{}, runtimeUID: runtimeUID,
		names: transport.Names{Prefix: fmt.Sprintf("bin%d-%d-", os.Getpid(), n)},
		keys:  map[string]ed25519.PrivateKey{}, versions: map[string]int64{}}
	os.MkdirAll(e.data, 0o700)
	os.Chown(e.data, runtimeUID, runtimeUID)
	first := 40000 + 100*n
	e.in, err = apps.OpenInstaller(supervise.Paths{Root: root}.Apps(), &apps.InstallerOptions{FirstUID: first, LastUID: first + 99,
		AndroidPackagesList: filepath.Join(root, "none"), PasswdFile: filepath.Join(root, "none")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.in.Close() })
	// The supervisor's launcher, so the extension host can have provider
	// apps started under their uids (it stops them after serve has ended).
	ls, err := launcher.NewServer(&launcher.Options{Installer: e.in, Names: e.names, RuntimeUID: runtimeUID,
		StopGrace: time.Second, Logger: slog.New(slog.NewTextHandler(e.stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	cmd := exec.Command(bin, "serve", "--data", e.data, "--socket-prefix", e.names.Prefix, "--log-level", "debug")
	cmd.Env = []string{"AGENTOS_ROOT=" + root, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(runtimeUID), Gid: uint32(runtimeUID)}}
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if e.adm != nil {
			e.adm.Close()
		}
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agentosd serve log:\n%s", e.stderr.String())
		}
	})
	// The serve log is printed by the cleanup above when this fails.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err := admin.Dial(context.Background(), e.names.Admin())
		require.NoError(ct, err)
		if err := c.Call(context.Background(), "status", nil, nil); err != nil {
			c.Close()
			require.NoError(ct, err)
		}
		e.adm = c
	}, 20*time.Second, 10*time.Millisecond, "agentosd serve did not start")
	e.call("model.set", map[string]any{"provider": "scripted"}, nil)
	conf := map[string]any{}
	for k, d := range map[string]time.Duration{"cooldownMs": cfg.DenyCooldown, "ttlMs": cfg.PendingTTL, "abandonMs": cfg.AbandonAfter} {
		if d > 0 {
			conf[k] = d.Milliseconds()
		}
	}
	e.call("callers.config", conf, nil)
	return e
}

func (e *binaryEnv) call(method string, params, out any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.adm.Call(context.Background(), method, params, out)
}

func (e *binaryEnv) install(a callers.App, shared string) callers.App {
	e.t.Helper()
	e.mu.Lock()
	key := e.keys[a.SigningDigest]
	if key == nil {
		key, _ = apps.GenerateKey()
		e.keys[a.SigningDigest] = key
	}
	e.versions[a.Package]++
	v := e.versions[a.Package]
	e.mu.Unlock()
	return e.installWith(a, shared, key, v)
}

func (e *binaryEnv) installWith(a callers.App, shared string, key ed25519.PrivateKey, version int64) callers.App {
	e.t.Helper()
	manifest := map[string]any{"package": a.Package, "label": a.Label, "versionCode": version, "binary": "app", "caller": true}
	if shared != "" {
		manifest["sharedUserId"] = shared
	}
	mj, _ := json.Marshal(manifest)
	src := fstest.MapFS{
		"app.json": {Data: mj},
		// The helper is started by the test itself; the bundle only needs
		// an executable.
		apps.BinaryPath(apps.HostABI(), "app"): {Data: []byte("#!/bin/sh\nexit 0\n"), Mode: 0o755},
	}
	path := filepath.Join(e.root, fmt.Sprintf("%s-%d.agentapp", a.Package, version))
	f, err := os.Create(path)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := apps.Pack(context.Background(), src, key, f); err != nil {
		e.t.Fatal(err)
	}
	f.Close()
	res, err := e.in.Install(context.Background(), path)
	if err != nil {
		e.t.Fatalf("install %s: %v", a.Package, err)
	}
	p := res.Package
	e.waitTable(p.Name, p.SigningDigest)
	return callers.App{UID: p.UID, Package: p.Name, Label: p.Label, SigningDigest: p.SigningDigest}
}

// waitTable waits until the runtime's package table shows pkg signed
// with digest (the table is polled).
func (e *binaryEnv) waitTable(pkg, digest string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		var list []struct {
			Package       string `json:"package"`
			SigningDigest string `json:"signingDigest"`
		}
		if e.call("app.list", nil, &list) != nil {
			return false
		}
		for _, p := range list {
			if p.Package == pkg {
				return digest == "" || p.SigningDigest == digest
			}
		}
		return digest == ""
	}, 10*time.Second, 5*time.Millisecond, "runtime did not see %s", pkg)
}

func (e *binaryEnv) uninstall(pkg string) {
	e.t.Helper()
	if _, err := e.in.Uninstall(context.Background(), pkg); err != nil {
		e.t.Fatal(err)
	}
	require.Eventually(e.t, func() bool {
		var list []struct {
			Package string `json:"package"`
		}
		e.call("app.list", nil, &list)
		for _, p := range list {
			if p.Package == pkg {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
}

func (e *binaryEnv) resign(a callers.App) callers.App {
	key, _ := apps.GenerateKey()
	e.mu.Lock()
	e.versions[a.Package]++
	v := e.versions[a.Package]
	e.mu.Unlock()
	return e.installWith(a, "", key, v)
}

func (e *binaryEnv) startApp(uid int) *app {
	return startHelper(e.t, e.names, uid, helperBin)
}

func (e *binaryEnv) snapshot() view {
	var v view
	if err := e.call("callers.list", nil, &v); err != nil {
		e.t.Fatalf("callers.list: %v", err)
	}
	return v
}

func (e *binaryEnv) answer(id string, allow bool) bool {
	var r struct{ Accepted bool }
	if err := e.call("callers.answer", map[string]any{"requestId": id, "allow": allow}, &r); err != nil {
		e.t.Fatalf("callers.answer: %v", err)
	}
	return r.Accepted
}

func (e *binaryEnv) set(pkg string, s callers.State) error {
	method := map[callers.State]string{callers.StateAllowed: "callers.allow", callers.StateDenied: "callers.deny",
		callers.StateRemoved: "callers.remove"}[s]
	err := e.call(method, map[string]string{"package": pkg}, nil)
	var ee *errcode.Error
	if errors.As(err, &ee) && ee.Details["reason"] == "not_found" {
		return errNotFound
	}
	return err
}

func (e *binaryEnv) preAllow(a callers.App) {
	e.t.Helper()
	_, id, _ := openLine(e.startApp(a.UID).do(map[string]any{"op": "raw"}))
	if id == "" || !e.answer(id, true) {
		e.t.Fatalf("preAllow %s failed", a.Package)
	}
}

func (e *binaryEnv) slotFree(a callers.App) bool {
	it, _ := e.snapshot().item(a.Package)
	return it.Usage.ActiveTasks == 0
}

func (e *binaryEnv) logs() string { return e.stderr.String() }

// testPlugin installs mcptest as a signed bundle, has the extension host
// read it, enables the plugin (new plugins start off), waits until echo is
// in the runtime's catalog and sets the consent mode.
func (e *binaryEnv) testPlugin(mode consent.AutoMode) {
	e.t.Helper()
	bin := testbin.Path(e.t, "github.com/agentoslab/agentlab/sampleapps/mcptest/cmd/mcptest")
	key, err := apps.GenerateKey()
	if err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.root, "mcptest.agentapp")
	f, err := os.Create(path)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := mcptest.WriteBundle(context.Background(), f, key, bin, mcptest.BundleOptions{}); err != nil {
		e.t.Fatal(err)
	}
	f.Close()
	res, err := e.in.Install(context.Background(), path)
	if err != nil {
		e.t.Fatalf("install mcptest: %v", err)
	}
	e.waitTable(mcptest.Package, res.Package.SigningDigest)
	for _, step := range []struct {
		method string
		params any
	}{
		{"plugins.rescan", nil},
		{"plugins.enable", map[string]string{"id": testPluginID}},
		{"consent.mode", map[string]string{"mode": string(mode)}},
	} {
		if err := e.call(step.method, step.params, nil); err != nil {
			e.t.Fatalf("%s: %v", step.method, err)
		}
	}
	var v struct {
		Met *bool `json:"met"`
	}
	err = e.call("catalog", map[string]any{"wait": "mcp__mcptest__test__echo", "timeoutMs": 30000}, &v)
	if err != nil || v.Met == nil || !*v.Met {
		e.t.Fatalf("echo is not in the catalog: %v", err)
	}
}

// pendingCards reads the cards as the owner does: `agentosd ctl consent
// list --json`.
func (e *binaryEnv) pendingCards() []consent.View {
	e.t.Helper()
	cmd := exec.Command(buildAgentosd(e.t), "ctl", "--socket-prefix", e.names.Prefix, "consent", "list", "--json")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	var l struct {
		Pending []consent.View `json:"pending"`
	}
	if err != nil || json.Unmarshal(out, &l) != nil {
		e.t.Fatalf("ctl consent list: %v %s %s", err, out, errb.String())
	}
	return l.Pending
}

func (e *binaryEnv) answerCard(id string, c consent.Choice) bool {
	var r struct {
		Accepted bool `json:"accepted"`
	}
	if err := e.call("consent.respond", map[string]string{"id": id, "choice": string(c)}, &r); err != nil {
		e.t.Fatalf("consent.respond: %v", err)
	}
	return r.Accepted
}

func (e *binaryEnv) storeBytes() []byte {
	db, _ := os.ReadFile(filepath.Join(e.data, "agentos.db"))
	wal, _ := os.ReadFile(filepath.Join(e.data, "agentos.db-wal"))
	return append(db, wal...)
}
