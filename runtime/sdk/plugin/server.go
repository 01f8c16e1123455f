package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// Environment the launcher gives a provider app's service process.
const (
	// EnvSocket names the socket to listen on ("@agentos-app.<pkg>.<server>").
	EnvSocket = "AGENTOS_SOCKET"
	// EnvRuntimeUID is the uid of the runtime, the only peer (besides the
	// app's own uid) a server admits: the analogue of Android's
	// BIND_MCP_SERVICE signature permission.
	EnvRuntimeUID = "AGENTOS_RUNTIME_UID"
)

// DefaultVersion is serverInfo.version when Info.Version is empty.
const DefaultVersion = "1.0.0"

// MaxToolNameLen is the longest tool name.
const MaxToolNameLen = 128

var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Info names a server in its initialize reply.
type Info struct {
	// Name is serverInfo.name (the server name of plugin.json).
	Name string
	// Version is serverInfo.version; "" means DefaultVersion.
	Version string
}

// Annotations are the MCP tool annotations. A nil pointer means the
// hint is not set; AgentOS treats only an explicit destructiveHint true
// as destructive, and readOnlyHint never lowers a tool's risk.
type Annotations struct {
	Title           string
	ReadOnlyHint    *bool
	DestructiveHint *bool
	IdempotentHint  *bool
	OpenWorldHint   *bool
}

// Handler runs one call. args is the JSON object the client sent ("{}"
// when it sent none). ctx ends when the client cancels the call
// (notifications/cancelled) or the connection closes.
//
// Return a Result for everything the model should read, including tool
// errors (Error). A returned error, or a panic, is a bug: the client gets
// an isError result "<tool> failed: <error>" and never a stack trace.
type Handler func(ctx context.Context, args json.RawMessage) (*Result, error)

// Tool is one tool of a server.
type Tool struct {
	// Name is 1–128 characters of [A-Za-z0-9_.-], unique per server.
	Name string
	// Title is an optional display name (shown on consent cards).
	Title string
	// Description tells the model what the tool does (English).
	Description string
	// InputSchema is a JSON Schema object whose "type" is "object".
	InputSchema json.RawMessage
	Annotations Annotations
	Handler     Handler
	// ValidateInput checks every call's arguments against InputSchema
	// (draft 2020-12: types, required, additionalProperties, bounds)
	// before the handler runs; a call that does not match gets an error
	// result naming the problem and the handler never sees it. Off, the
	// handler parses its own arguments (the sample apps' tool layer does,
	// with its own sentences).
	ValidateInput bool
}

// Result is what one call returns.
type Result struct {
	// Text is the one text content item the model reads.
	Text string
	// Structured, when not nil, is sent as structuredContent.
	Structured any
	// IsError marks a tool error (a sentence for the model).
	IsError bool
}

// Text returns a plain-text result.
func Text(s string) *Result { return &Result{Text: s} }

// JSON returns v as compact JSON text and, when v encodes as an object,
// the same value as structuredContent. A value that cannot be encoded is
// an error result.
func JSON(v any) *Result {
	text, err := compactJSON(v)
	if err != nil {
		return Error("The result could not be encoded as JSON.")
	}
	r := &Result{Text: text}
	if len(text) > 0 && text[0] == '{' {
		r.Structured = json.RawMessage(text)
	}
	return r
}

// Error returns a tool error: isError with one English sentence saying
// what is wrong and how to fix the call.
func Error(sentence string) *Result { return &Result{Text: sentence, IsError: true} }

// Options configure a Server. The zero value works.
type Options struct {
	// Logger receives connection and protocol problems, never arguments
	// or results; nil discards.
	Logger *slog.Logger
	// MaxMessageChars bounds one message on the socket, and therefore one
	// encoded tools/call response; 0 means MaxMessageChars.
	MaxMessageChars int
	// AllowUIDs are the peer uids Serve admits besides the process's own
	// uid. nil means the uid in $AGENTOS_RUNTIME_UID; when that is unset
	// too, any peer is admitted (a server started by hand).
	AllowUIDs []int
}

// Server is a provider app's MCP server: tools registered with AddTool,
// served on the app's socket (Serve) or on stdio (ServeStdio).
type Server struct {
	info     Info
	mcp      *mcp.Server
	logger   *slog.Logger
	maxChars int
	allow    []int

	mu    sync.Mutex
	tools map[string]Tool // guarded by mu
}

// NewServer returns a server with no tools.
func NewServer(info Info, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if info.Version == "" {
		info.Version = DefaultVersion
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxMessageChars <= 0 {
		o.MaxMessageChars = MaxMessageChars
	}
	s := &Server{
		info:     info,
		logger:   o.Logger,
		maxChars: o.MaxMessageChars,
		allow:    o.AllowUIDs,
		tools:    map[string]Tool{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: info.Name, Version: info.Version}, &mcp.ServerOptions{
		Logger:       o.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		// Every tool fits one page: tools/list is one round trip.
		PageSize: 1000,
	})
	return s
}

// Errors of AddTool.
var (
	ErrBadToolName  = errors.New("tool name must be 1-128 characters of A-Z, a-z, 0-9, '_', '.', '-'")
	ErrDuplicate    = errors.New("a tool with this name is already registered")
	ErrSchema       = errors.New(`inputSchema must be a JSON object whose "type" is "object"`)
	ErrNoHandler    = errors.New("tool has no handler")
	errNotListening = errors.New("no socket to listen on: " + EnvSocket + " is not set")
)

// AddTool registers a tool. The name must match ^[A-Za-z0-9_.-]{1,128}$
// and be new on this server, the input schema must be an object schema
// and the handler set; otherwise nothing is registered and the error
// says why. Connected clients are told (notifications/tools/list_changed).
func (s *Server) AddTool(t Tool) error {
	if !toolName.MatchString(t.Name) {
		return fmt.Errorf("add tool %q: %w", clipName(t.Name), ErrBadToolName)
	}
	if t.Handler == nil {
		return fmt.Errorf("add tool %s: %w", t.Name, ErrNoHandler)
	}
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil || string(schema["type"]) != `"object"` {
		return fmt.Errorf("add tool %s: %w", t.Name, ErrSchema)
	}
	if t.ValidateInput {
		if _, err := NewInputCheck(t); err != nil {
			return fmt.Errorf("add tool %s: %w", t.Name, err)
		}
	}
	s.mu.Lock()
	if _, dup := s.tools[t.Name]; dup {
		s.mu.Unlock()
		return fmt.Errorf("add tool %s: %w", t.Name, ErrDuplicate)
	}
	s.tools[t.Name] = t
	s.mu.Unlock()
	s.mcp.AddTool(mcpTool(t), s.handler(t))
	return nil
}

// MustAddTool is AddTool that panics on a bad tool: for tools fixed at
// build time, where a bad one is a programming error.
func (s *Server) MustAddTool(t Tool) {
	if err := s.AddTool(t); err != nil {
		panic("plugin: " + err.Error())
	}
}

// RemoveTool unregisters a tool and reports whether it was registered.
// Connected clients are told.
func (s *Server) RemoveTool(name string) bool {
	s.mu.Lock()
	_, ok := s.tools[name]
	delete(s.tools, name)
	s.mu.Unlock()
	if ok {
		s.mcp.RemoveTools(name)
	}
	return ok
}

// Tools returns the registered tools' names, sorted.
func (s *Server) Tools() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NotifyToolsChanged tells connected clients to list the tools again
// (for tools whose description or schema changed in place). AddTool and
// RemoveTool notify by themselves.
func (s *Server) NotifyToolsChanged() {
	names := s.Tools()
	if len(names) == 0 {
		return
	}
	s.mu.Lock()
	t, ok := s.tools[names[0]]
	s.mu.Unlock()
	if ok {
		// Re-registering a tool makes the MCP server send list_changed.
		s.mcp.AddTool(mcpTool(t), s.handler(t))
	}
}

func mcpTool(t Tool) *mcp.Tool {
	mt := &mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: json.RawMessage(t.InputSchema),
	}
	a := t.Annotations
	if a != (Annotations{}) {
		mt.Annotations = &mcp.ToolAnnotations{
			Title:           a.Title,
			DestructiveHint: a.DestructiveHint,
			OpenWorldHint:   a.OpenWorldHint,
			ReadOnlyHint:    a.ReadOnlyHint != nil && *a.ReadOnlyHint,
			IdempotentHint:  a.IdempotentHint != nil && *a.IdempotentHint,
		}
	}
	return mt
}

// handler wraps a tool's handler: arguments default to {}, errors and
// panics become "<tool> failed: …" results, and a result whose encoded
// response would exceed the message limit is replaced by an error result.
// InputCheck checks a tool's arguments against its input schema, which
// it resolves once. Tool.ValidateInput uses one before the handler; a
// handler that must see every call first (to count it, say) can use one
// itself.
type InputCheck struct {
	tool   string
	schema *jsonschema.Resolved
}

// NewInputCheck resolves t.InputSchema (draft 2020-12).
func NewInputCheck(t Tool) (*InputCheck, error) {
	var sch jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &sch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	r, err := sch.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return &InputCheck{tool: t.Name, schema: r}, nil
}

// Check returns the error result for arguments that do not match the
// schema (naming the problem), or nil when they match.
func (c *InputCheck) Check(args json.RawMessage) *Result {
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return Error(fmt.Sprintf("The arguments of %s are not JSON.", c.tool))
	}
	if err := c.schema.Validate(inst); err != nil {
		return Error(fmt.Sprintf("The arguments of %s do not match its input schema: %v", c.tool, err))
	}
	return nil
}

func (s *Server) handler(t Tool) mcp.ToolHandler {
	var check *InputCheck
	if t.ValidateInput {
		check, _ = NewInputCheck(t) // AddTool checked it resolves
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := json.RawMessage(`{}`)
		if req.Params != nil && len(req.Params.Arguments) > 0 && string(req.Params.Arguments) != "null" {
			args = req.Params.Arguments
		}
		var r *Result
		if check != nil {
			r = check.Check(args)
		}
		if r == nil {
			r = s.run(ctx, t, args)
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Text}}, IsError: r.IsError}
		if r.Structured != nil {
			res.StructuredContent = r.Structured
		}
		if n := encodedChars(res); n > s.maxChars {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
				"The result of %s is too large to return (%d characters; the limit is %d). Ask for less, for example a smaller page.",
				t.Name, n, s.maxChars)}}}
		}
		return res, nil
	}
}

func (s *Server) run(ctx context.Context, t Tool, args json.RawMessage) (r *Result) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("plugin: tool handler panicked", "tool", t.Name)
			r = Error(fmt.Sprintf("%s failed: panic: %v", t.Name, p))
		}
	}()
	res, err := t.Handler(ctx, args)
	switch {
	case err != nil:
		return Error(fmt.Sprintf("%s failed: %v", t.Name, err))
	case res == nil:
		return Error(t.Name + " failed: the tool returned no result")
	}
	return res
}

// envelopeChars is room for the JSON-RPC envelope around a result:
// {"jsonrpc":"2.0","id":<id>,"result":…}.
const envelopeChars = 64

func encodedChars(r *mcp.CallToolResult) int {
	b, err := json.Marshal(r)
	if err != nil {
		return 1 << 30
	}
	return transport.UTF16Len(b) + envelopeChars
}

func compactJSON(v any) (string, error) {
	var buf bytesBuffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	b := buf.b
	for len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	return string(b), nil
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// Serve listens on the socket named by $AGENTOS_SOCKET (the launcher's
// contract: transport.Names.App(package, server)) and serves every
// admitted connection until ctx ends. Peers are admitted by uid (see
// Options.AllowUIDs); others are closed without a byte.
func (s *Server) Serve(ctx context.Context) error {
	name := os.Getenv(EnvSocket)
	if name == "" {
		return fmt.Errorf("plugin: serve: %w", errNotListening)
	}
	ln, err := transport.Listen(name)
	if err != nil {
		return fmt.Errorf("plugin: serve: %w", err)
	}
	return s.ServeListener(ctx, ln)
}

// ServeListener serves connections accepted from ln until ctx ends, then
// closes ln and every connection and waits for them.
func (s *Server) ServeListener(ctx context.Context, ln *transport.Listener) error {
	allow, err := s.allowed()
	if err != nil {
		ln.Close()
		return err
	}
	var svc transport.Service
	err = svc.Serve(ctx, ln, func(c *transport.Conn) transport.Admission {
		if allow != nil && !allow(c.Cred().UID) {
			// Not the runtime: like an unbindable service, the peer gets
			// nothing at all.
			s.logger.Warn("plugin: connection refused: peer is not the runtime", "uid", c.Cred().UID)
			return transport.Refuse(nil)
		}
		return transport.Admission{Serve: func(ctx context.Context, c *transport.Conn) {
			if err := s.ServeConn(ctx, c); err != nil && ctx.Err() == nil {
				s.logger.Debug("plugin: connection ended", "err", err)
			}
		}}
	})
	if err != nil {
		return fmt.Errorf("plugin: %w", err)
	}
	if err := svc.Wait(); err != nil {
		return fmt.Errorf("plugin: accept: %w", err)
	}
	return nil
}

// allowed returns the admission rule of Serve (nil = everyone).
func (s *Server) allowed() (func(int) bool, error) {
	uids := s.allow
	if uids == nil {
		v := os.Getenv(EnvRuntimeUID)
		if v == "" {
			return nil, nil
		}
		uid, err := strconv.Atoi(v)
		if err != nil || uid < 0 {
			return nil, fmt.Errorf("plugin: %s=%q is not a uid", EnvRuntimeUID, v)
		}
		uids = []int{uid}
	}
	self := os.Getuid()
	return func(uid int) bool { return uid == self || slices.Contains(uids, uid) }, nil
}

// ServeConn serves one MCP session on one connection until the peer
// closes it or ctx ends.
func (s *Server) ServeConn(ctx context.Context, c io.ReadWriteCloser) error {
	return s.serveTransport(ctx, &Transport{Conn: c, MaxChars: s.maxChars, Serving: true})
}

func (s *Server) serveTransport(ctx context.Context, t *Transport) error {
	c := t.Conn
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		c.Close()
		return fmt.Errorf("plugin: connect: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		ss.Close()
		<-done
		return ctx.Err()
	}
}

// ServeStdio serves one MCP session on stdin/stdout (`<app> mcp
// --stdio`), so the MCP Inspector or any MCP client can talk to the app
// directly. It returns when stdin ends and every request read before was
// answered, or when ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.serveTransport(ctx, &Transport{Conn: stdio{}, MaxChars: s.maxChars, Serving: true, DrainOnEOF: true})
}

// stdio is stdin and stdout as one stream.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return os.Stdin.Close() }

func clipName(s string) string {
	if len(s) > MaxToolNameLen+8 {
		return s[:MaxToolNameLen+8] + "…"
	}
	return s
}
