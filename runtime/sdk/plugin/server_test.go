package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

var objSchema = json.RawMessage(`{"type":"object"}`)

func TestAddToolChecks(t *testing.T) {
	t.Parallel()
	h := func(context.Context, json.RawMessage) (*Result, error) { return Text("ok"), nil }
	tests := []struct {
		name string
		tool Tool
		want error
	}{
		{"ok", Tool{Name: "a.b-c_D9", InputSchema: objSchema, Handler: h}, nil},
		{"empty name", Tool{Name: "", InputSchema: objSchema, Handler: h}, ErrBadToolName},
		{"space", Tool{Name: "a b", InputSchema: objSchema, Handler: h}, ErrBadToolName},
		{"slash", Tool{Name: "a/b", InputSchema: objSchema, Handler: h}, ErrBadToolName},
		{"129 chars", Tool{Name: strings.Repeat("x", 129), InputSchema: objSchema, Handler: h}, ErrBadToolName},
		{"128 chars", Tool{Name: strings.Repeat("y", 128), InputSchema: objSchema, Handler: h}, nil},
		{"non-ascii", Tool{Name: "工具", InputSchema: objSchema, Handler: h}, ErrBadToolName},
		{"array schema", Tool{Name: "s1", InputSchema: json.RawMessage(`{"type":"array"}`), Handler: h}, ErrSchema},
		{"no schema", Tool{Name: "s2", Handler: h}, ErrSchema},
		{"schema not object", Tool{Name: "s3", InputSchema: json.RawMessage(`[]`), Handler: h}, ErrSchema},
		{"no handler", Tool{Name: "s4", InputSchema: objSchema}, ErrNoHandler},
	}
	s := NewServer(Info{Name: "t"}, nil)
	for _, tc := range tests {
		if err := s.AddTool(tc.tool); !errors.Is(err, tc.want) {
			t.Errorf("%s: AddTool = %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := s.AddTool(Tool{Name: "a.b-c_D9", InputSchema: objSchema, Handler: h}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
	if got := s.Tools(); len(got) != 2 {
		t.Errorf("tools = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustAddTool did not panic on a bad tool")
		}
	}()
	s.MustAddTool(Tool{Name: "bad name"})
}

func TestResults(t *testing.T) {
	t.Parallel()
	if r := JSON(map[string]any{"a": "<&>", "n": 1}); r.Text != `{"a":"<&>","n":1}` || r.Structured == nil || r.IsError {
		t.Errorf("JSON object = %+v", r)
	}
	if r := JSON([]int{1, 2}); r.Text != `[1,2]` || r.Structured != nil {
		t.Errorf("JSON array = %+v", r)
	}
	if r := JSON(make(chan int)); !r.IsError {
		t.Errorf("JSON of a channel = %+v", r)
	}
	if r := Error("No memo with id 7."); !r.IsError || r.Text != "No memo with id 7." {
		t.Errorf("Error = %+v", r)
	}
}

// serve starts s on a fresh socket and returns a connected client.
func serve(t *testing.T, s *Server, opts *ClientOptions) *Client {
	t.Helper()
	name := t.TempDir() + "/app.sock"
	ln, err := transport.Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeListener(ctx, ln)
	}()
	t.Cleanup(func() { cancel(); <-done })
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	c, err := Dial(dctx, name, -1, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestServerClientRoundTrip(t *testing.T) {
	t.Parallel()
	var cancelled atomic.Int32
	started := make(chan struct{}, 1)
	s := NewServer(Info{Name: "memo"}, &Options{AllowUIDs: []int{}})
	s.MustAddTool(Tool{Name: "echo", Title: "Echo", Description: "Echo text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Annotations: Annotations{ReadOnlyHint: ptr(true)},
		Handler: func(_ context.Context, args json.RawMessage) (*Result, error) {
			var a struct{ Text *string }
			if json.Unmarshal(args, &a) != nil || a.Text == nil {
				return Error("echo needs a string \"text\"."), nil
			}
			return JSON(map[string]string{"text": *a.Text}), nil
		}})
	s.MustAddTool(Tool{Name: "wipe", InputSchema: objSchema, Annotations: Annotations{DestructiveHint: ptr(true)},
		Handler: func(context.Context, json.RawMessage) (*Result, error) { return nil, errors.New("disk on fire") }})
	s.MustAddTool(Tool{Name: "boom", InputSchema: objSchema,
		Handler: func(context.Context, json.RawMessage) (*Result, error) { panic("oops") }})
	s.MustAddTool(Tool{Name: "huge", InputSchema: objSchema,
		Handler: func(context.Context, json.RawMessage) (*Result, error) {
			return Text(strings.Repeat("h", 70000)), nil
		}})
	s.MustAddTool(Tool{Name: "slow", InputSchema: objSchema,
		Handler: func(ctx context.Context, _ json.RawMessage) (*Result, error) {
			started <- struct{}{}
			<-ctx.Done()
			cancelled.Add(1)
			return Text("cancelled"), nil
		}})
	changed := make(chan struct{}, 16)
	c := serve(t, s, &ClientOptions{OnToolsChanged: func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	ctx := context.Background()

	if name, version := c.ServerInfo(); name != "memo" || version != DefaultVersion {
		t.Errorf("server info %q %q", name, version)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ToolInfo{}
	for _, ti := range tools {
		byName[ti.Name] = ti
	}
	if len(tools) != 5 || byName["echo"].Title != "Echo" || *byName["wipe"].DestructiveHint != true ||
		byName["echo"].DestructiveHint != nil || string(byName["slow"].InputSchema) != `{"type":"object"}` {
		t.Fatalf("tools = %+v", tools)
	}

	tests := []struct {
		tool, args string
		text       string
		isError    bool
		structured bool
	}{
		{"echo", `{"text":"hi"}`, `{"text":"hi"}`, false, true},
		{"echo", `{}`, `echo needs a string "text".`, true, false},
		{"echo", ``, `echo needs a string "text".`, true, false},
		{"wipe", `{}`, "wipe failed: disk on fire", true, false},
		{"boom", `{}`, "boom failed: panic: oops", true, false},
		{"huge", `{}`, "The result of huge is too large to return", true, false},
	}
	for _, tc := range tests {
		r, err := c.CallTool(ctx, tc.tool, json.RawMessage(tc.args))
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if !strings.HasPrefix(r.Text, tc.text) || r.IsError != tc.isError || (r.Structured != nil) != tc.structured {
			t.Errorf("%s %s = %+v", tc.tool, tc.args, r)
		}
	}
	var rpc *RPCError
	if _, err := c.CallTool(ctx, "nope", nil); !errors.As(err, &rpc) {
		t.Errorf("unknown tool: %v", err)
	}

	// Cancelling the caller's context cancels the handler.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := c.CallTool(cctx, "slow", nil); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	require.Eventually(t, func() bool { return cancelled.Load() == 1 }, 10*time.Second, 5*time.Millisecond)

	// Adding and removing tools notifies the client.
	s.MustAddTool(Tool{Name: "extra", InputSchema: objSchema, Handler: func(context.Context, json.RawMessage) (*Result, error) { return Text("extra"), nil }})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after AddTool")
	}
	if !s.RemoveTool("extra") || s.RemoveTool("extra") {
		t.Fatal("RemoveTool")
	}
}

func ptr[T any](v T) *T { return &v }

func TestDialWrongPeer(t *testing.T) {
	t.Parallel()
	name := t.TempDir() + "/sq.sock"
	ln, err := transport.Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Dial(ctx, name, 4242, nil); !errors.Is(err, ErrWrongPeer) {
		t.Fatalf("Dial to a socket of another uid: %v", err)
	}
}

// A server that never answers initialize fails the handshake at the
// caller's deadline.
func TestInitializeTimeout(t *testing.T) {
	t.Parallel()
	a, _ := pipeConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := NewClient(ctx, a, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewClient = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// appTool, appAnnotations and appResult have the shapes of the sample
// apps' tool layer.
type appAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

type appHandler func(ctx context.Context, args json.RawMessage) (any, error)

type appTool struct {
	Name        string
	Title       string
	Description string
	InputSchema json.RawMessage
	Annotations appAnnotations
	Handler     appHandler
}

type appResult struct {
	Text       string
	Structured any
	IsError    bool
}

func appRun(ctx context.Context, t appTool, args json.RawMessage) appResult {
	v, err := t.Handler(ctx, args)
	if err != nil {
		return appResult{Text: err.Error(), IsError: true}
	}
	b, _ := json.Marshal(v)
	return appResult{Text: string(b), Structured: v}
}

func TestAddAppTools(t *testing.T) {
	t.Parallel()
	s := NewServer(Info{Name: "app"}, nil)
	tools := []appTool{
		{Name: "a_list", Description: "List.", InputSchema: objSchema, Annotations: appAnnotations{Title: "List", ReadOnlyHint: ptr(true)},
			Handler: func(context.Context, json.RawMessage) (any, error) { return map[string]int{"n": 1}, nil }},
		{Name: "a_delete", InputSchema: objSchema, Annotations: appAnnotations{DestructiveHint: ptr(true)},
			Handler: func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("No item with id 7") }},
	}
	if err := AddAppTools(s, tools, appRun); err != nil {
		t.Fatal(err)
	}
	c := serve(t, s, nil)
	ctx := context.Background()
	list, err := c.ListTools(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list = %v, %v", list, err)
	}
	for _, ti := range list {
		if ti.Name == "a_delete" && (ti.DestructiveHint == nil || !*ti.DestructiveHint) {
			t.Errorf("a_delete lost destructiveHint: %+v", ti)
		}
		if ti.Name == "a_list" && ti.Title != "List" {
			t.Errorf("a_list title %q", ti.Title)
		}
	}
	r, err := c.CallTool(ctx, "a_delete", nil)
	if err != nil || !r.IsError || r.Text != "No item with id 7" {
		t.Fatalf("a_delete = %+v, %v", r, err)
	}
	r, err = c.CallTool(ctx, "a_list", nil)
	if err != nil || r.Text != `{"n":1}` || string(r.Structured) != `{"n":1}` {
		t.Fatalf("a_list = %+v, %v", r, err)
	}
	if err := AddAppTools(s, []appTool{{Name: "bad name", InputSchema: objSchema}}, appRun); !errors.Is(err, ErrBadToolName) {
		t.Fatalf("bad app tool: %v", err)
	}
}

func TestRunServeUsage(t *testing.T) {
	t.Parallel()
	s := NewServer(Info{Name: "memo"}, nil)
	for _, args := range [][]string{{"--server", "other"}, {"extra"}, {"--bogus"}} {
		var ue *UsageError
		if err := RunServe(context.Background(), s, args); !errors.As(err, &ue) {
			t.Errorf("RunServe(%q) = %v", args, err)
		}
	}
	var ue *UsageError
	if err := RunMCP(context.Background(), s, nil); !errors.As(err, &ue) {
		t.Errorf("RunMCP without --stdio = %v", err)
	}
}

func Example() {
	srv := NewServer(Info{Name: "memo"}, nil)
	srv.MustAddTool(Tool{
		Name:        "memo_add",
		Description: "Add a memo with the given text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Handler: func(ctx context.Context, args json.RawMessage) (*Result, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(args, &a); err != nil || a.Text == "" {
				return Error("memo_add needs a non-empty \"text\"."), nil
			}
			return JSON(map[string]any{"id": 1, "text": a.Text}), nil
		},
	})
	// On a device: srv.Serve(ctx) listens on $AGENTOS_SOCKET. Here the
	// example serves a socket of its own and calls the tool through it.
	dir, _ := osMkdirTemp()
	defer osRemoveAll(dir)
	ln, _ := transport.Listen(dir + "/memo.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); srv.ServeListener(ctx, ln) }()
	c, err := Dial(ctx, dir+"/memo.sock", -1, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := c.CallTool(ctx, "memo_add", json.RawMessage(`{"text":"buy milk"}`))
	fmt.Println(r.Text, r.IsError)
	c.Close()
	cancel()
	<-done
	// Output: {"id":1,"text":"buy milk"} false
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "plugin-example-") }
func osRemoveAll(dir string)       { os.RemoveAll(dir) }
