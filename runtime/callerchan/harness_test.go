package callerchan_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/runtime/acp"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// helperBin is a copy of the test binary that app uids may execute; it
// runs the app helper (helper_test.go) when started with helperEnv set.
var helperBin string

const helperEnv = "CALLERCHAN_APP_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper(os.Stdin, os.Stdout))
	}
	dir, err := os.MkdirTemp("", "callerchan-helper-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	helperBin = filepath.Join(dir, "apphelper")
	if err := copyFile(self, helperBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testbin.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var prefixSeq atomic.Int64

// The test plugin of spec §9.6: plugin "mcptest", server "test".
var testTools = []catalog.ToolID{
	{Plugin: "mcptest", Server: "test", Tool: "echo"},
	{Plugin: "mcptest", Server: "test", Tool: "stats"},
}

// pluginTools is an engine.Tools over testTools with catalog naming and
// toolScope filtering; echo returns its "text" argument, as mcptest's
// does. Every call asks the consent coordinator first, as the broker does
// for a third-party MCP tool (risk WRITE, spec §5.1).
type pluginTools struct {
	names   map[catalog.ToolID]string
	byName  map[string]catalog.ToolID
	consent *consent.Coordinator
}

func newPluginTools(co *consent.Coordinator) *pluginTools {
	names, err := catalog.Assign(testTools)
	if err != nil {
		panic(err)
	}
	p := &pluginTools{names: names, byName: map[string]catalog.ToolID{}, consent: co}
	for id, n := range names {
		p.byName[n] = id
	}
	return p
}

func (p *pluginTools) visible(s engine.SessionView) map[string]bool {
	out := map[string]bool{}
	if s.Mode == "chat" {
		return out
	}
	scope := catalog.ScopeOf(s.Scope)
	for id, n := range p.names {
		if scope != nil && !containsScope(scope, id) {
			continue
		}
		out[n] = true
	}
	return out
}

func containsScope(scope []catalog.ScopeEntry, id catalog.ToolID) bool {
	for _, e := range scope {
		if e.Plugin == id.Plugin && e.Tool == id.Tool {
			return true
		}
	}
	return false
}

func (p *pluginTools) ForSession(_ context.Context, s engine.SessionView) ([]engine.ToolDef, string, error) {
	var out []engine.ToolDef
	for n := range p.visible(s) {
		// A title unlike the name: the SDK must name calls by
		// _meta."org.agentos".toolName, not by the title.
		out = append(out, engine.ToolDef{Tool: model.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			Display: engine.ToolDisplay{Title: "Tool " + p.byName[n].Tool}})
	}
	return out, "", nil
}

func (p *pluginTools) ForgetSession(string) {}

func (p *pluginTools) Call(ctx context.Context, req engine.ToolCallRequest, ev engine.ToolEvents) (engine.ToolResult, error) {
	if !p.visible(req.Session)[req.Name] {
		return engine.ToolResult{Text: "[agentos:tool_not_in_catalog] Tool " + req.Name + " is not available.",
			IsError: true, Code: "tool_not_in_catalog", Outcome: engine.OutcomeRejected}, nil
	}
	id := p.byName[req.Name]
	c := req.Session.Caller
	out := p.consent.Ask(ctx, consent.Request{
		SessionID: req.Session.SessionID, TaskID: req.Session.TaskID, ToolCallID: req.ToolCallID,
		Caller:   consent.Initiator{Kind: string(c.Kind), UID: c.UID, Package: c.Package, Label: c.Label},
		ToolName: req.Name, Source: &id, Arguments: req.Arguments, Risk: catalog.RiskWrite,
		Options: consent.Options(consent.Offer{Risk: catalog.RiskWrite, Rememberable: true, Source: &id}),
	})
	if !out.Allowed() {
		return engine.ToolResult{Text: errcode.ToolText(errcode.ToolDenied, out.DenialText()), IsError: true,
			Code: string(errcode.ToolDenied), Outcome: engine.OutcomeRejected}, nil
	}
	if err := ev.Emit(ctx, engine.EvToolDispatched, engine.ToolRefBody{ToolCallID: req.ToolCallID}); err != nil {
		return engine.ToolResult{}, err
	}
	var args struct{ Text string }
	json.Unmarshal(req.Arguments, &args)
	return engine.ToolResult{Text: args.Text, Outcome: engine.OutcomeCompleted}, nil
}

// holdPrompt is an inline model script (runtime/model/script) that
// streams "working" and then holds the task until it is cancelled.
const holdPrompt = "#!agentos-script\nsteps:\n  - text: working\n    hangAfter: 1\n"

// callPrompt is an inline script calling the test plugin's echo with
// text, then echo again with "got " and what the first call returned (so
// the second call's arguments prove the result reached the model).
func callPrompt(text string) string {
	return "#!agentos-script\nsteps:\n  - toolCalls:\n      - mcp: [mcptest, test, echo]\n        arguments: {text: " + text +
		"}\n  - toolCalls:\n      - mcp: [mcptest, test, echo]\n        arguments: {text: \"got ${result[0]}\"}\nfinal: done\n"
}

// writePrompt is an inline script making one echo call (a WRITE tool, so
// the user is asked) and then ending the turn.
const writePrompt = "#!agentos-script\nsteps:\n  - toolCalls:\n      - mcp: [mcptest, test, echo]\n        arguments: {text: ping}\nfinal: done\n"

// runtimeEnv is an in-process runtime: store, engine, ACP agent, quota,
// authorization registry and the caller channel on a real socket.
type runtimeEnv struct {
	t      testing.TB
	names  transport.Names
	st     *store.Store
	eng    *engine.Engine
	quota  *quota.Quota
	reg    *callers.Registry
	co     *consent.Coordinator
	srv    *callerchan.Server
	adm    *admin.Server
	br     *bridge.Bridge
	logBuf *syncbuf.Buffer
	// dbPath is the store's file (leak checks read it).
	dbPath string

	mu   sync.Mutex
	pkgs map[int][]callers.App
}

func newRuntime(t testing.TB, cfg callers.Config) *runtimeEnv {
	t.Helper()
	return newRuntimeLookup(t, cfg, nil)
}

// newRuntimeLookup is newRuntime with the package table's lookup (nil:
// the env's own map, filled by install).
func newRuntimeLookup(t testing.TB, cfg callers.Config, lookup callerchan.Lookup) *runtimeEnv {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	dbPath := filepath.Join(dir, "agentos.db")
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	q := quota.New(&quota.Options{Logger: logger})
	// Consent answers itself (allow) unless a case asks for the cards.
	co := consent.NewCoordinator(&consent.CoordinatorOptions{Logger: logger})
	co.SetMode(consent.AutoAllow)
	eng, err := engine.New(ctx, &engine.Options{Store: st, Tools: newPluginTools(co), Admission: q, Logger: logger,
		Models: engine.StaticModel(model.Config{Provider: "scripted"}, script.NewProvider(nil)),
		Limits: engine.Limits{CancelWait: 3 * time.Second, CancelGrace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := callers.Open(&callers.Options{Dir: filepath.Join(dir, "acp"), Config: cfg, Canceller: eng, Logger: logger,
		Usage: func(owner string) (int64, int, int) {
			u, eu := q.Usage(owner), eng.Usage(owner)
			return u.Total, u.InWindow, eu.Running + eu.Queued
		}})
	if err != nil {
		t.Fatal(err)
	}
	env := &runtimeEnv{t: t, names: transport.Names{Prefix: fmt.Sprintf("cc%d-%d-", os.Getpid(), prefixSeq.Add(1))},
		st: st, eng: eng, quota: q, reg: reg, co: co, logBuf: logs, dbPath: dbPath, pkgs: map[int][]callers.App{}}
	agent := acp.New(eng, &acp.Options{Version: "test", CancelWait: 3 * time.Second, Logger: logger})
	if lookup == nil {
		lookup = func(uid int) []callers.App {
			env.mu.Lock()
			defer env.mu.Unlock()
			return append([]callers.App(nil), env.pkgs[uid]...)
		}
	}
	srv, err := callerchan.New(&callerchan.Options{
		Name: env.names.Caller(), Registry: reg, RuntimeUID: -1, Logger: logger,
		Packages: lookup,
		Serve:    func(ctx context.Context, c engine.Caller, s *transport.RPCStream) { agent.Serve(ctx, c, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	env.srv = srv
	br, err := bridge.Open(&bridge.Options{Dir: filepath.Join(dir, "desktop"), Name: env.names.ACP(), Logger: logger,
		Serve: func(ctx context.Context, c engine.Caller, s *transport.RPCStream) { agent.Serve(ctx, c, s) }})
	if err != nil {
		t.Fatal(err)
	}
	env.br = br
	adm := admin.NewServer(&admin.Options{Name: env.names.Admin(), Logger: logger,
		Methods: append(callerchan.AdminMethods(reg, srv), bridge.AdminMethods(br)...)})
	if err := adm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	env.adm = adm
	t.Cleanup(func() {
		adm.Close()
		br.Close()
		srv.Close()
		reg.Close()
		co.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(cctx)
		st.Close()
	})
	return env
}

func (r *runtimeEnv) item(pkg string) (callers.Item, bool) {
	for _, it := range r.reg.List().Callers {
		if it.PackageName == pkg {
			return it, true
		}
	}
	return callers.Item{}, false
}

func (r *runtimeEnv) pendingRequest(pkg string) string {
	it, _ := r.item(pkg)
	return it.RequestID
}

// app is a helper process running under an app uid.
type app struct {
	t     testing.TB
	uid   int
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	mu    sync.Mutex
	waits chan helperWait
}

// startApp runs the helper under uid against the runtime's sockets.
func (r *runtimeEnv) startApp(uid int) *app {
	r.t.Helper()
	return r.startAppBinary(uid, helperBin)
}

// startAppBinary runs bin (a copy of the helper) under uid.
func (r *runtimeEnv) startAppBinary(uid int, bin string) *app {
	r.t.Helper()
	return startHelper(r.t, r.names, uid, bin)
}

// startHelper runs bin (a copy of the helper) under uid against names.
func startHelper(t testing.TB, names transport.Names, uid int, bin string) *app {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = []string{helperEnv + "=1", "HELPER_SOCKET=" + names.Caller(), "HOME=/"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	a := &app{t: t, uid: uid, cmd: cmd, in: in, out: sc}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return a
}

// do sends one command and returns its reply.
func (a *app) do(cmd map[string]any) helperReply {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	b, _ := json.Marshal(cmd)
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("helper %d: write: %v", a.uid, err)
	}
	if !a.out.Scan() {
		a.t.Fatalf("helper %d: no reply to %s: %v", a.uid, b, a.out.Err())
	}
	var r helperReply
	if err := json.Unmarshal(a.out.Bytes(), &r); err != nil {
		a.t.Fatalf("helper %d: bad reply %q", a.uid, a.out.Bytes())
	}
	return r
}

// ctl runs `agentosd ctl` against this runtime and returns the exit code
// and stdout.
func (r *runtimeEnv) ctl(stdin string, args ...string) (int, string) {
	r.t.Helper()
	var out, errb bytes.Buffer
	verbs := append(append(admin.Verbs(), callerchan.CtlVerbs()...), bridge.CtlVerbs()...)
	code := admin.Ctl(context.Background(), verbs, append([]string{"--socket-prefix", r.names.Prefix}, args...),
		admin.CtlIO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	if errb.Len() > 0 {
		r.t.Logf("ctl %v stderr: %s", args, errb.String())
	}
	return code, out.String()
}
