package mcptest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/ext/manifest"
	"github.com/agentoslab/agentlab/runtime/ext/skills"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/stretchr/testify/require"
)

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptest-bin-")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, Binary)
	out, err := exec.Command("go", "build", "-o", binPath, "./cmd/mcptest").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serveApp serves a fresh App on a socket and returns the app and a client.
func serveApp(t *testing.T, o *Options) (*App, *plugin.Client, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 64)
	app := New(o)
	name := t.TempDir() + "/mcptest.sock"
	ln, err := transport.Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); app.Server().ServeListener(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := plugin.Dial(ctx, name, os.Getuid(), &plugin.ClientOptions{OnToolsChanged: func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return app, c, changed
}

func call(t *testing.T, c *plugin.Client, tool, args string) *plugin.CallResult {
	t.Helper()
	r, err := c.CallTool(context.Background(), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return r
}

func TestTools(t *testing.T) {
	t.Parallel()
	var exited atomic.Int32
	exitCh := make(chan int, 1)
	app, c, changed := serveApp(t, &Options{Exit: func(code int) { exited.Add(1); exitCh <- code }})
	ctx := context.Background()

	list, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	risky := map[string]bool{}
	for _, ti := range list {
		names = append(names, ti.Name)
		risky[ti.Name] = ti.DestructiveHint != nil && *ti.DestructiveHint
	}
	slices.Sort(names)
	if !slices.Equal(names, Tools) {
		t.Fatalf("tools = %v, want %v", names, Tools)
	}
	for n, d := range risky {
		if d != (n == ToolWipe) {
			t.Errorf("%s destructiveHint = %v", n, d)
		}
	}

	r := call(t, c, ToolEcho, `{"text":"héllo"}`)
	var st struct {
		Text string `json:"text"`
		PID  int    `json:"pid"`
	}
	if json.Unmarshal(r.Structured, &st) != nil || r.Text != "héllo" || st.Text != "héllo" || st.PID != os.Getpid() || r.IsError {
		t.Fatalf("echo = %+v", r)
	}
	if r := call(t, c, ToolEcho, `{"text":7}`); !r.IsError {
		t.Fatalf("echo with a number = %+v", r)
	}
	if r := call(t, c, ToolWipe, `{}`); r.Text != "wiped" {
		t.Fatalf("wipe = %+v", r)
	}
	if r := call(t, c, ToolSlow, `{"ms":1}`); r.IsError {
		t.Fatalf("slow 1 ms = %+v", r)
	}

	// slow counts a cancellation.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := c.CallTool(cctx, ToolSlow, json.RawMessage(`{}`)); errc <- err }()
	require.Eventually(t, func() bool { return app.Snapshot().InFlight == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	require.Eventually(t, func() bool { return app.Snapshot().Cancelled == 1 }, 10*time.Second, 5*time.Millisecond)

	var s Stats
	if err := json.Unmarshal(call(t, c, ToolStats, `{}`).Structured, &s); err != nil {
		t.Fatal(err)
	}
	if s.PID != os.Getpid() || s.Calls != 5 || s.Cancelled != 1 || s.InFlight != 0 || s.Extra {
		t.Fatalf("stats = %+v", s)
	}

	// add_tool / remove_tool are idempotent and notify.
	for range 2 {
		call(t, c, ToolAddTool, `{}`)
	}
	<-changed
	if r := call(t, c, ToolExtra, `{}`); r.Text != "extra" {
		t.Fatalf("extra = %+v", r)
	}
	for range 2 {
		call(t, c, ToolRemoveTool, `{}`)
	}
	require.Eventually(t, func() bool {
		l, _ := c.ListTools(ctx)
		return len(l) == len(Tools)
	}, 10*time.Second, 5*time.Millisecond)
	var rpc *plugin.RPCError
	if _, err := c.CallTool(ctx, ToolExtra, nil); !errors.As(err, &rpc) {
		t.Fatalf("extra after remove: %v", err)
	}

	if r := call(t, c, ToolDie, `{"after_ms":1}`); !strings.Contains(r.Text, "1 ms") {
		t.Fatalf("die = %+v", r)
	}
	if code := <-exitCh; code != 3 {
		t.Fatalf("exit code %d", code)
	}
	call(t, c, ToolDie, `{"after_ms":1}`)
	time.Sleep(20 * time.Millisecond)
	if exited.Load() != 1 {
		t.Fatalf("die exited %d times", exited.Load())
	}
}

// The plugin assets pass the runtime's validators: a valid plugin.json
// naming server "test" and its service, skill greet with its reference
// file, skill broken with a frontmatter problem.
func TestAssets(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("assets/agent-plugin/plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	p, problems := manifest.ParsePlugin(raw)
	if len(problems) > 0 || p.Name != Plugin || len(p.Servers) != 1 || p.Servers[0] != (manifest.AppServer{Name: Server, Service: Service}) {
		t.Fatalf("plugin.json: %+v %v", p, problems)
	}
	greet, _ := os.ReadFile("assets/agent-plugin/skills/greet/SKILL.md")
	fm, sp := skills.ParseFrontmatter(greet)
	if name, _ := fm.Name(); name != "greet" || len(sp) > 0 {
		t.Fatalf("greet: %v %v", fm, sp)
	}
	details, _ := os.ReadFile("assets/agent-plugin/skills/greet/reference/details.md")
	if !bytes.Contains(details, []byte("marker 7f3a")) {
		t.Fatal("details.md lost its marker")
	}
	broken, _ := os.ReadFile("assets/agent-plugin/skills/broken/SKILL.md")
	if _, problems := skills.ParseFrontmatter(broken); len(problems) == 0 {
		t.Fatal("broken/SKILL.md parses cleanly")
	}
}

func TestBundle(t *testing.T) {
	t.Parallel()
	key, err := apps.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m, err := WriteBundle(context.Background(), &buf, key, binPath, BundleOptions{VersionCode: 2, PluginName: "mcptest2",
		Files: map[string][]byte{"skills/broken/SKILL.md": nil}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := apps.VerifyBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got.App.Package != Package || got.App.VersionCode != 2 || m.SigningDigest != apps.SigningDigest(key.Public().(ed25519.PublicKey)) {
		t.Fatalf("manifest %+v", got.App)
	}
	var names []string
	for _, f := range got.Files {
		names = append(names, f.Name)
	}
	for _, want := range []string{"app.json", "assets/agent-plugin/plugin.json", "assets/agent-plugin/skills/greet/reference/details.md", apps.BinaryPath(apps.HostABI(), Binary)} {
		if !slices.Contains(names, want) {
			t.Errorf("bundle lacks %s: %v", want, names)
		}
	}
	if slices.Contains(names, "assets/agent-plugin/skills/broken/SKILL.md") {
		t.Error("removed file still in the bundle")
	}
}

// `mcptest mcp --stdio` serves the same tools on stdin/stdout.
func TestStdio(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binPath, "mcp", "--stdio")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := plugin.NewClient(ctx, rwc{stdout, stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.CallTool(ctx, ToolEcho, json.RawMessage(`{"text":"over stdio"}`))
	if err != nil || r.Text != "over stdio" {
		t.Fatalf("echo over stdio = %+v, %v", r, err)
	}
	if name, _ := c.ServerInfo(); name != Server {
		t.Fatalf("server name %q", name)
	}
}

type rwc struct {
	io.ReadCloser
	io.WriteCloser
}

func (r rwc) Close() error { r.WriteCloser.Close(); return r.ReadCloser.Close() }

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"bogus"}, {"serve", "--server", "other", "--socket", "@x"}, {"mcp"}} {
		err := exec.Command(binPath, args...).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("mcptest %q: %v", args, err)
		}
	}
}

// The sample apps' SDK-free tools register with the provider SDK in one
// call: the shapes of apptool.Tool, Annotations and Result fit
// plugin.AddAppTools, and apptool.Run keeps the apps' error conventions.
func TestAppToolAdapter(t *testing.T) {
	t.Parallel()
	yes := true
	tools := []apptool.Tool{
		{Name: "memo_get", Description: "Get a memo.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: apptool.Annotations{Title: "Get memo", ReadOnlyHint: &yes},
			Handler: func(context.Context, json.RawMessage) (any, error) {
				return nil, apptool.Errorf("No memo with id %d", 7)
			}},
		{Name: "memo_boom", Description: "A bug.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("internal detail") }},
	}
	srv := plugin.NewServer(plugin.Info{Name: "memo"}, nil)
	if err := plugin.AddAppTools(srv, tools, apptool.Run); err != nil {
		t.Fatal(err)
	}
	name := t.TempDir() + "/memo.sock"
	ln, err := transport.Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.ServeListener(ctx, ln) }()
	defer func() { cancel(); <-done }()
	c, err := plugin.Dial(ctx, name, os.Getuid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.CallTool(ctx, "memo_get", nil)
	if err != nil || !r.IsError || r.Text != "No memo with id 7" {
		t.Fatalf("user error: %+v %v", r, err)
	}
	r, err = c.CallTool(ctx, "memo_boom", nil)
	if err != nil || !r.IsError || strings.Contains(r.Text, "internal detail") {
		t.Fatalf("bug: %+v %v", r, err)
	}
	list, _ := c.ListTools(ctx)
	if len(list) != 2 || list[0].Title == "" && list[1].Title == "" {
		t.Fatalf("list %+v", list)
	}
}

// Every tool's schema is enforced (additionalProperties:false, types,
// required, minimum): a call outside it is an error result and the tool
// does nothing (wipe does not answer "wiped"); it still counts as a call
// received.
func TestSchemasAreEnforced(t *testing.T) {
	t.Parallel()
	app, c, _ := serveApp(t, &Options{Exit: func(int) { t.Error("a refused die ended the process") }})
	tests := []struct {
		tool, args string
		ok         bool
	}{
		{ToolEcho, `{"text":"hi"}`, true},
		{ToolEcho, `{"text":"hi","extra":1}`, false},
		{ToolEcho, `{}`, false},
		{ToolEcho, `{"text":7}`, false},
		{ToolSlow, `{"ms":1}`, true},
		{ToolSlow, `{"ms":-1}`, false},
		{ToolSlow, `{"ms":"1"}`, false},
		{ToolStats, `{}`, true},
		{ToolStats, `{"verbose":true}`, false},
		{ToolWipe, `{"everything":true}`, false},
		{ToolDie, `{"after_ms":1.5}`, false},
	}
	for _, tc := range tests {
		before := app.Snapshot().Calls
		r := call(t, c, tc.tool, tc.args)
		if r.IsError == tc.ok {
			t.Errorf("%s %s: isError %v (%s)", tc.tool, tc.args, r.IsError, r.Text)
		}
		if tc.tool == ToolSlow && tc.ok {
			continue
		}
		if !tc.ok {
			if !strings.Contains(r.Text, "do not match its input schema") {
				t.Errorf("%s %s: %q does not name the schema", tc.tool, tc.args, r.Text)
			}
			if r.Text == "wiped" {
				t.Errorf("%s %s: the tool ran", tc.tool, tc.args)
			}
			if after := app.Snapshot().Calls; tc.tool != ToolStats && after != before+1 {
				t.Errorf("%s %s: calls %d → %d, want one more", tc.tool, tc.args, before, after)
			}
		}
	}
}

// --help (alone or after a command) explains the binary on stdout, exit 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"serve", "--help"}, {"mcp", "-h"}} {
		out, err := exec.Command(binPath, args...).Output()
		if err != nil || !strings.Contains(string(out), "usage: mcptest serve") || !strings.Contains(string(out), "mcp --stdio") {
			t.Errorf("mcptest %q: %v\n%s", args, err, out)
		}
	}
}

// A client that writes initialize and a call and then ends its input
// (printf … | mcptest mcp --stdio) gets both answers before the process
// exits 0.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binPath, "mcp", "--stdio")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}
`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("exit: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":1`) || !strings.Contains(lines[1], "still here") {
		t.Fatalf("answers:\n%s", out)
	}
}
