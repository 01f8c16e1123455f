package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Options configure an Agent. The zero value works.
type Options struct {
	// Version is the runtime version reported by initialize.
	Version string
	// Logger receives ids, methods and codes, never params; nil discards.
	Logger *slog.Logger
	// Servers keeps sessions' caller-supplied MCP servers; nil accepts http
	// servers into memory and reports them connect_failed.
	Servers SessionServers
	// CancelWait bounds how long a cancelled prompt waits for its task to
	// stop before answering cancelled anyway; zero means 12 s.
	CancelWait time.Duration
	// Clock times the cancel wait; nil means the real clock.
	Clock clock.Clock
	// DrainOnEOF makes a connection whose input has ended still answer the
	// requests it already received (stdio: a client may close stdin and
	// read the answers). Otherwise such a connection is over at once and
	// its pending answers are dropped. Tasks run on either way.
	DrainOnEOF bool
}

// Agent is the ACP agent. It is safe for concurrent use by many
// connections.
type Agent struct {
	e          *engine.Engine
	version    string
	log        *slog.Logger
	servers    SessionServers
	cancelWait time.Duration
	clock      clock.Clock
	drain      bool

	// cancels counts handled session/cancel notifications (tests wait on it:
	// notifications and requests are handled concurrently).
	cancels atomic.Int64
}

// New returns an agent serving e.
func New(e *engine.Engine, opts *Options) *Agent {
	if opts == nil {
		opts = &Options{}
	}
	a := &Agent{e: e, version: opts.Version, log: opts.Logger, servers: opts.Servers, cancelWait: opts.CancelWait,
		clock: clock.Or(opts.Clock), drain: opts.DrainOnEOF}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.servers == nil {
		a.servers = NewMemoryServers()
	}
	if a.cancelWait <= 0 {
		a.cancelWait = 12 * time.Second
	}
	if a.version == "" {
		a.version = "dev"
	}
	return a
}

// Stream is one connection's JSON-RPC lines, such as a
// *transport.RPCStream: Reader yields whole well-formed lines, Writer
// takes whole messages, Close ends the connection.
type Stream interface {
	Reader() io.Reader
	Writer() io.Writer
	Close() error
}

// Serve runs ACP on one connection for caller c until the peer goes away
// or ctx ends, then closes the stream and returns once the connection's
// handlers have returned. Tasks the connection started keep running.
func (a *Agent) Serve(ctx context.Context, c engine.Caller, s Stream) error {
	base, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	cn := &conn{a: a, caller: c, ready: make(chan struct{}), prompts: map[string][]*promptState{}, base: base}
	in, out := s.Reader(), s.Writer()
	if a.drain {
		cn.drain = newDrainState()
		in = &drainReader{r: in, cn: cn}
		out = drainWriter{w: out, d: cn.drain}
	}
	cn.sdk = sdk.NewConnection(cn.handle, out, in)
	cn.sdk.SetLogger(slog.New(quietHandler{a.log.Handler()}))
	close(cn.ready)
	select {
	case <-cn.sdk.Done():
	case <-ctx.Done():
	}
	cn.mu.Lock()
	cn.closed = true
	cn.mu.Unlock()
	if cn.drain != nil && ctx.Err() == nil {
		// Answer what was received: every request read reached handle
		// before the SDK saw the end of input (drainReader); wait for
		// the handlers and then for the SDK to write their answers.
		// Shutdown (ctx) still cuts it short.
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			cn.handlers.Wait()
			cn.drain.waitAnswers(base)
		}()
		select {
		case <-drained:
		case <-ctx.Done():
		}
		defer func() { <-drained }()
	}
	abandon()
	s.Close()
	<-cn.sdk.Done()
	cn.handlers.Wait()
	return nil
}

// conn is one client connection.
type conn struct {
	a      *Agent
	caller engine.Caller
	sdk    *sdk.Connection
	ready  chan struct{} // closed once sdk is set
	// base is the parent of every handler's context: it ends when the
	// connection is abandoned, not when the peer's input ends (the SDK
	// ends request contexts then; see handle).
	base context.Context

	handlers sync.WaitGroup // handlers running; Add only while !closed

	// drain counts messages in and answers out on a draining
	// connection; nil otherwise.
	drain *drainState

	mu sync.Mutex // guards the fields below
	// closed: the connection ended; no new handler starts.
	closed bool
	// extensions negotiated by initialize.
	extensions []string
	// prompts in progress on this connection, by session.
	prompts map[string][]*promptState
}

func (cn *conn) negotiated(ext string) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	for _, e := range cn.extensions {
		if e == ext {
			return true
		}
	}
	return false
}

// handler answers one method. A nil result is sent as null.
type handler func(cn *conn, ctx context.Context, p params) (any, error)

// methods is the agent's method table, sorted by name (a test keeps it
// so); everything else is -32601.
var methods = table([]struct {
	name string
	fn   handler
}{
	{sdk.AgentMethodInitialize, (*conn).initialize},
	{sdk.AgentMethodSessionCancel, (*conn).cancel},
	{sdk.AgentMethodSessionClose, (*conn).closeSession},
	{methodSessionDelete, (*conn).deleteSession},
	{sdk.AgentMethodSessionFork, (*conn).forkSession},
	{sdk.AgentMethodSessionList, (*conn).listSessions},
	{sdk.AgentMethodSessionLoad, (*conn).loadSession},
	{sdk.AgentMethodSessionNew, (*conn).newSession},
	{sdk.AgentMethodSessionPrompt, (*conn).prompt},
	{sdk.AgentMethodSessionResume, (*conn).resumeSession},
	{sdk.AgentMethodSessionSetConfigOption, (*conn).setConfigOption},
	{sdk.AgentMethodSessionSetMode, (*conn).setMode},
	{sdk.AgentMethodSessionSetModel, (*conn).setModel},
})

// methodSessionDelete is AgentOS's own method; the SDK has no constant.
const methodSessionDelete = "session/delete"

type methodTable struct {
	names []string
	fns   map[string]handler
}

// table builds the method table; a duplicate name is a programming error.
func table(entries []struct {
	name string
	fn   handler
}) methodTable {
	t := methodTable{fns: make(map[string]handler, len(entries))}
	for _, e := range entries {
		if _, dup := t.fns[e.name]; dup {
			panic("acp: method registered twice: " + e.name)
		}
		t.fns[e.name] = e.fn
		t.names = append(t.names, e.name)
	}
	return t
}

// sorted reports whether the table lists its methods in order.
func (t methodTable) sorted() bool { return sort.StringsAreSorted(t.names) }

// handle is the SDK's MethodHandler: look up, parse params, run, map errors.
func (cn *conn) handle(ctx context.Context, method string, raw json.RawMessage) (any, *sdk.RequestError) {
	fn, ok := methods.fns[method]
	if !ok {
		cn.arrived()
		return nil, sdk.NewMethodNotFound(method)
	}
	<-cn.ready
	cn.mu.Lock()
	closed := cn.closed
	if !closed {
		cn.handlers.Add(1)
	}
	cn.mu.Unlock()
	cn.arrived()
	if closed {
		return nil, toWire(errcode.New(errcode.Busy, "the connection is closing"))
	}
	defer cn.handlers.Done()

	// The SDK ends a request's context when the peer's input ends and on
	// $/cancel_request. Only the latter cancels the handler here; the
	// connection's end is decided by Serve through base.
	hctx, cancel := context.WithCancel(cn.base)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if !cn.gone() {
			cancel()
		}
	})
	defer stop()

	p, err := parseParams(raw)
	if err == nil {
		var res any
		res, err = fn(cn, hctx, p)
		if err == nil {
			return res, nil
		}
	}
	we := toWire(err)
	cn.a.log.Debug("request refused", "method", method, "code", errcode.CodeOf(err))
	return nil, we
}

// toWire is the one place a Go error becomes a JSON-RPC error (spec §3).
func toWire(err error) *sdk.RequestError {
	w := errcode.From(err).Wire()
	return &sdk.RequestError{Code: w.Code, Message: w.Message, Data: w.Data}
}

// notify sends one session/update.
func (cn *conn) notify(ctx context.Context, sessionID string, u sdk.SessionUpdate) error {
	return cn.sdk.SendNotification(ctx, sdk.ClientMethodSessionUpdate, sdk.SessionNotification{
		SessionId: sdk.SessionId(sessionID), Update: u,
	})
}

// quietHandler passes the SDK's log messages on without their attributes:
// the SDK attaches raw lines and ids, which may carry prompts.
type quietHandler struct{ h slog.Handler }

func (q quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return q.h.Enabled(ctx, slog.LevelDebug) && l >= slog.LevelDebug
}

func (q quietHandler) Handle(ctx context.Context, r slog.Record) error {
	return q.h.Handle(ctx, slog.NewRecord(r.Time, slog.LevelDebug, "acp-sdk: "+r.Message, r.PC))
}

func (q quietHandler) WithAttrs([]slog.Attr) slog.Handler { return q }
func (q quietHandler) WithGroup(string) slog.Handler      { return q }

// arrived notes one message that reached handle; a handler it starts is
// registered in cn.handlers before.
func (cn *conn) arrived() {
	if cn.drain != nil {
		cn.drain.arrivals.Add(1)
		poke(cn.drain.arrived)
	}
}

// drainState is what a draining connection counts. The SDK hands each
// request to a goroutine of its own, ends the connection as soon as the
// input ends, and writes an answer after the handler returned. So a
// request read just before the end could reach handle only after Serve
// closed the connection (and be refused busy), and an answer could be
// written after Serve returned. To keep "what was read is answered", the
// end of input is passed on only once every message handed to the SDK
// reached handle (drainReader), and Serve waits for as many answers as
// requests were read (drainWriter). Abandoning the connection cuts both
// waits short.
type drainState struct {
	handed   atomic.Int64 // messages passed on that the SDK gives to handle
	requests atomic.Int64 // of those, requests (each gets one answer)
	arrivals atomic.Int64 // messages that reached handle
	answers  atomic.Int64 // answers written
	arrived  chan struct{}
	answered chan struct{}
}

func newDrainState() *drainState {
	return &drainState{arrived: make(chan struct{}, 1), answered: make(chan struct{}, 1)}
}

// poke signals c without blocking; the waiter re-reads its counters.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// waitAnswers waits until every request read has been answered, or ctx
// ends.
func (d *drainState) waitAnswers(ctx context.Context) {
	for d.answers.Load() < d.requests.Load() {
		select {
		case <-d.answered:
		case <-ctx.Done():
			return
		}
	}
}

// drainReader is the SDK's input on a draining connection.
type drainReader struct {
	r  io.Reader
	cn *conn

	pending []byte // the line being passed on, up to its '\n'
	tooLong bool   // the line being passed on is over maxCountedLine
}

func (d *drainReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.count(p[:n])
	if err != nil {
		d.waitArrivals()
	}
	return n, err
}

// count finds whole lines in what was passed on. (A last line without
// '\n' is not counted: the SDK handles it only after the end of input is
// passed on. The transport's streams end every line.)
func (d *drainReader) count(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(d.pending)+len(b) > maxCountedLine {
				d.tooLong, d.pending = true, d.pending[:0]
			} else if !d.tooLong {
				d.pending = append(d.pending, b...)
			}
			return
		}
		line := b[:i]
		if len(d.pending) > 0 {
			line = append(d.pending, line...)
			d.pending = d.pending[:0]
		}
		if !d.tooLong && len(line) <= maxCountedLine {
			if handed, request := handedToHandler(line); handed {
				d.cn.drain.handed.Add(1)
				if request {
					d.cn.drain.requests.Add(1)
				}
			}
		}
		d.tooLong = false
		b = b[i+1:]
	}
}

// maxCountedLine is the SDK's own line limit: it ends the connection on
// a longer line, so such a line is never handed to handle.
const maxCountedLine = 10 << 20

// handedToHandler reports whether the SDK gives line to the method
// handler, and whether it is a request (answered) rather than a
// notification: it decodes lines the way the SDK does and hands on
// requests and notifications, except $/cancel_request, which it handles
// itself.
func handedToHandler(line []byte) (handed, request bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return false, false
	}
	var m struct {
		JSONRPC string            `json:"jsonrpc"`
		ID      *json.RawMessage  `json:"id,omitempty"`
		Method  string            `json:"method,omitempty"`
		Params  json.RawMessage   `json:"params,omitempty"`
		Result  json.RawMessage   `json:"result,omitempty"`
		Error   *sdk.RequestError `json:"error,omitempty"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return false, false
	}
	if m.ID != nil {
		return true, true
	}
	return m.Method != "$/cancel_request", false
}

// waitArrivals waits until every message handed to the SDK reached
// handle, or the connection is abandoned.
func (d *drainReader) waitArrivals() {
	st := d.cn.drain
	for st.arrivals.Load() < st.handed.Load() {
		select {
		case <-st.arrived:
		case <-d.cn.base.Done():
			return
		}
	}
}

// drainWriter is the SDK's output on a draining connection: it counts
// the answers (messages with an id and no method) the SDK writes, one
// whole message per Write. An answer whose write failed counts too: it
// will not be written later.
type drainWriter struct {
	w io.Writer
	d *drainState
}

func (w drainWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	var m struct {
		ID     *json.RawMessage `json:"id"`
		Method string           `json:"method"`
	}
	if json.Unmarshal(p, &m) == nil && m.ID != nil && m.Method == "" {
		w.d.answers.Add(1)
		poke(w.d.answered)
	}
	return n, err
}
