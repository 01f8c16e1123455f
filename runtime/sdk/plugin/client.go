package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// ProtocolVersion is the MCP revision the client asks for (the one
// AgentOS's plugin channel uses, spec §1).
const ProtocolVersion = "2025-06-18"

// MaxListPages bounds tools/list paging (spec §4.9).
const MaxListPages = 100

// ClientOptions configure a Client. The zero value works.
type ClientOptions struct {
	// Name and Version are clientInfo; "" means "agentos" and DefaultVersion.
	Name, Version string
	// MaxMessageChars bounds one message; 0 means MaxMessageChars.
	MaxMessageChars int
	// OnToolsChanged is called for each notifications/tools/list_changed.
	// It runs on the connection's reading goroutine and must not block.
	OnToolsChanged func()
	// Logger receives protocol problems; nil discards.
	Logger *slog.Logger
}

// Client is an MCP client on one connection to a provider's server: the
// extension host's client, and the one an app uses to test its own
// server.
type Client struct {
	cs      *mcp.ClientSession
	done    chan struct{}
	err     atomic.Pointer[error]
	dropped atomic.Int64
}

// Dropped is how many tools the last ListTools dropped.
func (c *Client) Dropped() int { return int(c.dropped.Load()) }

// ToolInfo is one tool as a server lists it.
type ToolInfo struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// DestructiveHint and ReadOnlyHint are nil when the server did not
	// say (only an explicit destructiveHint true makes a tool HIGH).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	// OpenWorldHint is nil when the server did not say.
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// CallResult is what a call returned.
type CallResult struct {
	// Text is the text of the content items, one per line; non-text items
	// are shown as "[image]", "[audio]" or "[resource]".
	Text string
	// Structured is structuredContent, if any.
	Structured json.RawMessage
	IsError    bool
}

// RPCError is an error response from the server: the call was refused
// (unknown tool, bad params, over the size limit) and had no effect, or,
// for a response over the limit (code -32603), its result was lost.
type RPCError struct {
	Code    int64
	Message string
}

func (e *RPCError) Error() string { return fmt.Sprintf("mcp error %d: %s", e.Code, e.Message) }

// ErrClosed means the connection closed before the answer came; a call
// in flight may have run.
var ErrClosed = errors.New("plugin: connection closed")

// NewClient runs the MCP handshake (initialize) on rwc and returns the
// client. ctx bounds the handshake; a server that does not answer in
// time fails it. On failure rwc is closed.
func NewClient(ctx context.Context, rwc io.ReadWriteCloser, opts *ClientOptions) (*Client, error) {
	max := 0
	if opts != nil {
		max = opts.MaxMessageChars
	}
	return NewClientTransport(ctx, &Transport{Conn: rwc, MaxChars: max}, rwc, opts)
}

// NewClientTransport is NewClient over any MCP transport (the runtime
// uses it for caller-supplied Streamable HTTP servers). closer, when not
// nil, is closed if the handshake does not finish in time.
func NewClientTransport(ctx context.Context, t mcp.Transport, closer io.Closer, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "agentos"
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	copts := &mcp.ClientOptions{
		Logger:       o.Logger,
		Capabilities: &mcp.ClientCapabilities{},
	}
	if f := o.OnToolsChanged; f != nil {
		copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { f() }
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: o.Name, Version: o.Version}, copts)
	type result struct {
		cs  *mcp.ClientSession
		err error
	}
	// Connect honours ctx for the initialize call; closing rwc on expiry
	// also unblocks a write to a server that stopped reading.
	ch := make(chan result, 1)
	go func() {
		cs, err := mc.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
		ch <- result{cs, err}
	}()
	closeIt := func() {
		if closer != nil {
			closer.Close()
		}
	}
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		closeIt()
		r = <-ch
		if r.err == nil {
			r.cs.Close()
			r.err = ctx.Err()
		}
	}
	if r.err != nil {
		closeIt()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("plugin: initialize: %w", ctx.Err())
		}
		return nil, fmt.Errorf("plugin: initialize: %w", r.err)
	}
	c := &Client{cs: r.cs, done: make(chan struct{})}
	go func() {
		err := r.cs.Wait()
		c.err.Store(&err)
		close(c.done)
	}()
	return c, nil
}

// Dial connects to a provider's socket by name and runs the handshake.
// If wantUID >= 0, the listening process must run as that uid (checked
// with SO_PEERCRED before a byte is sent); otherwise ErrWrongPeer.
func Dial(ctx context.Context, socket string, wantUID int, opts *ClientOptions) (*Client, error) {
	c, err := transport.Dial(ctx, socket)
	if err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	if wantUID >= 0 {
		cred, err := transport.PeerCred(c)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("plugin: %w", err)
		}
		if cred.UID != wantUID {
			c.Close()
			return nil, fmt.Errorf("plugin: %s is served by uid %d, not %d: %w", socket, cred.UID, wantUID, ErrWrongPeer)
		}
	}
	return NewClient(ctx, c, opts)
}

// ErrWrongPeer means a socket is held by a process of another uid (a
// squatter on the name).
var ErrWrongPeer = errors.New("plugin: the socket is not served by the expected app")

// ServerInfo returns the server's name and version from initialize.
func (c *Client) ServerInfo() (name, version string) {
	if r := c.cs.InitializeResult(); r != nil && r.ServerInfo != nil {
		return r.ServerInfo.Name, r.ServerInfo.Version
	}
	return "", ""
}

// Limits on what a server may list; tools outside them are dropped.
const (
	// MaxListedNameChars bounds a listed tool's name.
	MaxListedNameChars = 256
	// MaxSchemaBytes bounds a listed tool's input schema.
	MaxSchemaBytes = 64 << 10
)

// ListTools lists every tool, following at most MaxListPages pages.
// Tools a model could not be given are dropped and counted (Dropped): an
// empty or over-long name, a name already listed, an input schema that is
// not a JSON object or is over MaxSchemaBytes.
func (c *Client) ListTools(ctx context.Context) ([]ToolInfo, error) {
	var out []ToolInfo
	seen := map[string]bool{}
	dropped := 0
	defer func() { c.dropped.Store(int64(dropped)) }()
	cursor := ""
	for page := 0; ; page++ {
		if page == MaxListPages {
			return nil, fmt.Errorf("plugin: tools/list: more than %d pages", MaxListPages)
		}
		res, err := c.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, c.mapErr("tools/list", err)
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			schema, err := json.Marshal(t.InputSchema)
			if err != nil || len(schema) > MaxSchemaBytes || len(schema) == 0 || schema[0] != '{' ||
				t.Name == "" || transport.UTF16LenString(t.Name) > MaxListedNameChars || seen[t.Name] {
				dropped++
				continue
			}
			seen[t.Name] = true
			ti := ToolInfo{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema}
			if a := t.Annotations; a != nil {
				ti.DestructiveHint = a.DestructiveHint
				ti.OpenWorldHint = a.OpenWorldHint
				ro := a.ReadOnlyHint
				ti.ReadOnlyHint = &ro
				if ti.Title == "" {
					ti.Title = a.Title
				}
			}
			out = append(out, ti)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
}

// CallTool calls a tool. args nil means {}. When ctx ends first the call
// is cancelled on the server (notifications/cancelled) and ctx's error
// is returned. Errors: *RPCError (refused), ErrClosed (connection lost;
// the call may have run), ErrMessageTooLarge (not sent).
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (*CallResult, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.mapErr("tools/call", err)
	}
	out := &CallResult{IsError: res.IsError}
	var parts []string
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[image]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio]")
		default:
			parts = append(parts, "[resource]")
		}
	}
	out.Text = strings.Join(parts, "\n")
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Structured = b
		}
	}
	return out, nil
}

func (c *Client) mapErr(op string, err error) error {
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		return fmt.Errorf("plugin: %s: %w", op, &RPCError{Code: we.Code, Message: we.Message})
	case errors.Is(err, ErrMessageTooLarge):
		return fmt.Errorf("plugin: %s: %w", op, ErrMessageTooLarge)
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), c.Closed():
		return fmt.Errorf("plugin: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("plugin: %s: %w", op, err)
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Closed reports whether the connection has ended.
func (c *Client) Closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Close ends the session and waits for its connection to close.
func (c *Client) Close() error {
	err := c.cs.Close()
	<-c.done
	return err
}
