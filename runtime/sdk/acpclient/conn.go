package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// Channel-open protocol of the caller socket (see runtime/callerchan).
const (
	openMethod       = "_org.agentos/channel"
	reasonPending    = "authorization_pending"
	reasonDenied     = "denied"
	reasonNotOpen    = "not_open"
	openLineTimeout  = 10 * time.Second
	setupWait        = 5 * time.Second
	maxUnclaimed     = 4096 // updates buffered for a session not yet returned
	maxQueuedEvents  = 1 << 16
	defaultRetry     = time.Second
	defaultMaxWait   = 90 * time.Second
	extSessionSetup  = "sessionSetup"
	metaKey          = "org.agentos"
	methodDelete     = "session/delete"
	methodSessionUpd = "session/update"
)

// Options configure Connect. The zero value works.
type Options struct {
	// SocketName is the caller socket; "" means transport.Names{}.Caller().
	SocketName string
	// OnWaiting is called on every try while the owner has not answered
	// the authorization request, with the request id and the time waited.
	OnWaiting func(requestID string, waited time.Duration)
	// RetryInterval between tries while pending; zero means 1 s.
	RetryInterval time.Duration
	// MaxWait bounds the wait for the owner's answer; zero means 90 s.
	MaxWait time.Duration
	// ClientName and ClientVersion go into initialize's clientInfo. They
	// are display-only: the runtime identifies the app by its uid.
	ClientName    string
	ClientVersion string
	// Logger receives connection diagnostics (never message content); nil
	// discards.
	Logger *slog.Logger
}

// Capabilities are what the runtime declared in initialize.
type Capabilities struct {
	ProtocolVersion int
	AgentName       string
	AgentVersion    string
	LoadSession     bool
	Fork            bool
	List            bool
	Resume          bool
	Delete          bool
	Close           bool
	// MCPHTTP: sessions accept caller-supplied Streamable-HTTP MCP servers.
	MCPHTTP bool
	// Extensions are the AgentOS extensions the runtime advertises.
	Extensions []string
}

// Conn is an open channel to AgentOS. Safe for concurrent use.
type Conn struct {
	nc     net.Conn
	stream *transport.RPCStream
	rpc    *sdk.Connection
	caps   Capabilities
	log    *slog.Logger

	dropped atomic.Int64 // notifications the runtime could not send

	ctx    context.Context // ends when the connection ends or Close is called
	cancel context.CancelFunc
	wg     sync.WaitGroup // prompt goroutines

	mu        sync.Mutex // guards the fields below
	sessions  map[string]*Session
	unclaimed map[string][]update // updates for sessions not yet returned
	nUnclaim  int
	closed    bool
}

// Dropped is how many notifications the runtime told this connection it
// could not send because they were over the line limit.
func (c *Conn) Dropped() int64 { return c.dropped.Load() }

// Connect opens the caller channel and initializes ACP. While the owner
// has not answered the authorization request it retries every
// RetryInterval up to MaxWait (AUTHORIZATION_PENDING_TIMEOUT after that);
// a denial is DENIED, a runtime that is not listening NOT_INSTALLED.
func Connect(ctx context.Context, opts *Options) (*Conn, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.SocketName == "" {
		o.SocketName = transport.Names{}.Caller()
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = defaultRetry
	}
	if o.MaxWait <= 0 {
		o.MaxWait = defaultMaxWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	for {
		nc, lr, err := open(ctx, o.SocketName)
		if err == nil {
			c, err := newConn(ctx, nc, lr, &o)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason != reasonPending {
			return nil, err
		}
		waited := time.Since(start)
		if waited >= o.MaxWait {
			return nil, &Error{Code: AuthorizationPendingTimeout, AgentosCode: e.AgentosCode, Reason: reasonPending,
				RequestID: e.RequestID, Message: "the user did not answer the authorization request in time"}
		}
		if o.OnWaiting != nil {
			o.OnWaiting(e.RequestID, waited)
		}
		t := time.NewTimer(o.RetryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &Error{Code: Failed, Message: "connect cancelled", Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// open dials once and reads the channel-open line.
func open(ctx context.Context, name string) (net.Conn, *transport.LineReader, error) {
	nc, err := transport.Dial(ctx, name)
	if err != nil {
		return nil, nil, &Error{Code: NotInstalled, Message: "AgentOS is not running or not installed", Err: err}
	}
	deadline := time.Now().Add(openLineTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	nc.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Unix(1, 0)) })
	lr := transport.NewLineReader(nc, transport.MaxLineChars)
	line, err := lr.ReadLine()
	stop()
	nc.SetReadDeadline(time.Time{})
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, nil, &Error{Code: Failed, Message: "connect cancelled", Err: ctx.Err()}
		}
		return nil, nil, &Error{Code: Disconnected, Message: "AgentOS closed the channel before answering", Err: err}
	}
	if err := ParseOpenLine(line); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, lr, nil
}

// ParseOpenLine reads the runtime's first line on the caller channel: nil
// for the success notification, an *Error for a refusal (DENIED for
// denied, FAILED with Reason "not_open" for not_open, and an error with
// Reason "authorization_pending" and the RequestID while the owner has
// not answered), FAILED for anything else.
func ParseOpenLine(line []byte) error {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				AgentosCode string `json:"agentosCode"`
				Reason      string `json:"reason"`
				RequestID   string `json:"requestId"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		return &Error{Code: Failed, Message: "AgentOS answered the channel open with something unexpected"}
	}
	if m.Error == nil {
		if m.Method == openMethod {
			return nil
		}
		return &Error{Code: Failed, Message: "AgentOS answered the channel open with something unexpected"}
	}
	e := &Error{AgentosCode: m.Error.Data.AgentosCode, Reason: m.Error.Data.Reason, Message: m.Error.Message,
		RequestID: m.Error.Data.RequestID}
	switch e.Reason {
	case reasonDenied:
		e.Code = Denied
	case reasonPending:
		// Internal: Connect retries; only a timeout reaches the app.
		e.Code = AuthorizationPendingTimeout
	default:
		e.Code = Failed
		if e.Reason == "" {
			e.Reason = reasonNotOpen
		}
	}
	return e
}

func newConn(ctx context.Context, nc net.Conn, lr *transport.LineReader, o *Options) (*Conn, error) {
	c := &Conn{nc: nc, log: o.Logger, sessions: map[string]*Session{}, unclaimed: map[string][]update{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.stream = transport.NewRPCStreamFromLines(nc, lr, &transport.RPCOptions{Logger: o.Logger})
	c.rpc = sdk.NewConnection(c.handle, c.stream.Writer(), c.stream.Reader())
	c.rpc.SetLogger(o.Logger)
	go func() {
		<-c.rpc.Done()
		c.cancel()
	}()
	name := o.ClientName
	if name == "" {
		name = "acpclient"
	}
	version := o.ClientVersion
	if version == "" {
		version = "1"
	}
	req := map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]string{"name": name, "version": version},
		"_meta":              map[string]any{metaKey: map[string]any{"extensions": []string{extSessionSetup}}},
	}
	var resp struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession     bool `json:"loadSession"`
			McpCapabilities struct {
				HTTP bool `json:"http"`
			} `json:"mcpCapabilities"`
			SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
		AgentInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"agentInfo"`
		Meta map[string]struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"_meta"`
	}
	if err := c.call(ctx, sdk.AgentMethodInitialize, req, &resp); err != nil {
		c.Close()
		return nil, err
	}
	sc := resp.AgentCapabilities.SessionCapabilities
	has := func(k string) bool { v, ok := sc[k]; return ok && string(v) != "null" }
	c.caps = Capabilities{
		ProtocolVersion: resp.ProtocolVersion, AgentName: resp.AgentInfo.Name, AgentVersion: resp.AgentInfo.Version,
		LoadSession: resp.AgentCapabilities.LoadSession, Fork: has("fork"), List: has("list"), Resume: has("resume"),
		Delete: has("delete"), Close: has("close"), MCPHTTP: resp.AgentCapabilities.McpCapabilities.HTTP,
	}
	for name := range resp.Meta[metaKey].Extensions {
		c.caps.Extensions = append(c.caps.Extensions, name)
	}
	return c, nil
}

// Capabilities returns what the runtime declared.
func (c *Conn) Capabilities() Capabilities { return c.caps }

// Done is closed when the connection ended (the runtime closed it, e.g.
// on revocation, or Close was called).
func (c *Conn) Done() <-chan struct{} { return c.ctx.Done() }

// Close closes the channel. Prompts in progress end with DISCONNECTED;
// their tasks keep running in AgentOS.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stream.Close()
	c.cancel()
	<-c.rpc.Done()
	c.wg.Wait()
	return nil
}

// call sends a request and decodes its result into out (nil discards).
func (c *Conn) call(ctx context.Context, method string, params, out any) error {
	raw, err := sdk.SendRequest[json.RawMessage](c.rpc, ctx, method, params)
	if err != nil {
		if ctx.Err() != nil {
			return &Error{Code: Failed, Message: method + " cancelled", Err: ctx.Err()}
		}
		return c.mapErr(err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return &Error{Code: Failed, Message: fmt.Sprintf("%s: malformed result", method), Err: err}
		}
	}
	return nil
}

// handle answers the runtime's requests and notifications.
func (c *Conn) handle(_ context.Context, method string, params json.RawMessage) (any, *sdk.RequestError) {
	if method == transport.DroppedMethod {
		// An update too long to send was dropped by the runtime; the
		// connection goes on.
		c.dropped.Add(1)
		c.log.Warn("the runtime dropped an oversize notification")
		return nil, nil
	}
	if method != methodSessionUpd {
		// The runtime asks nothing of callers (no permission requests,
		// no fs or terminal).
		return nil, sdk.NewMethodNotFound(method)
	}
	u, err := parseUpdate(params)
	if err != nil {
		return nil, nil
	}
	c.mu.Lock()
	s := c.sessions[u.sessionID]
	if s == nil {
		if c.nUnclaim < maxUnclaimed {
			c.unclaimed[u.sessionID] = append(c.unclaimed[u.sessionID], u)
			c.nUnclaim++
		}
		c.mu.Unlock()
		return nil, nil
	}
	c.mu.Unlock()
	s.apply(u)
	return nil, nil
}

// claim returns the one session object of id on this connection, creating
// it and handing it the updates that arrived before its response.
func (c *Conn) claim(id string) (*Session, []update) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		s = newSession(c, id)
		c.sessions[id] = s
	}
	pending := c.unclaimed[id]
	delete(c.unclaimed, id)
	c.nUnclaim -= len(pending)
	return s, pending
}

// forget drops a session object (deleted).
func (c *Conn) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, id)
	c.nUnclaim -= len(c.unclaimed[id])
	delete(c.unclaimed, id)
}
