// Package rpc is the runtime's one JSON-RPC 2.0 peer for its private and
// owner protocols: messages one per line in both directions, calls with
// per-call cancellation ("$/cancel"), notifications, bounded concurrency,
// and errors in the runtime's one wire shape (errcode.WireError). The
// link between serve and the extension host (runtime/ext/internal/wire)
// and the admin API (runtime/admin) both run on it. ACP and MCP have
// their SDKs' own engines.
//
// Who may connect is decided before a Peer exists (transport.Service and
// SO_PEERCRED); this package only frames and routes messages.
package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Defaults of Options.
const (
	// DefaultMaxLineChars bounds one message: a whole catalog push of the
	// extension host fits (4,096 tools with their schemas); anything
	// larger is a broken peer.
	DefaultMaxLineChars = 16 << 20
	// DefaultMaxInflight bounds the requests a peer serves at once; more
	// wait (the reader stops reading).
	DefaultMaxInflight = 256
	// DefaultWriteTimeout bounds one write.
	DefaultWriteTimeout = 30 * time.Second
)

const cancelMethod = "$/cancel"

// writeFailGrace is how long a peer whose write failed goes on reading
// before it closes: the other end may have refused the connection with a
// line already on its way (admin's busy) and closed it.
const writeFailGrace = time.Second

// Handler answers a request. Errors should be *errcode.Error; others are
// sent as internal without their text. ctx ends when the peer cancels
// the call or the connection closes.
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// Notify receives a notification. It runs on the reading goroutine, in
// order, and must not block for long.
type Notify func(method string, params json.RawMessage)

// ErrClosed means the connection ended before the answer came.
var ErrClosed = errors.New("rpc: connection closed")

// Options configure a Peer. The zero value works: a peer that serves no
// requests and ignores notifications.
type Options struct {
	// Handler answers requests; nil answers each with unsupported.
	Handler Handler
	// Notify receives notifications; nil ignores them.
	Notify Notify
	// MaxLineChars bounds a message read (UTF-16 units); 0 means
	// DefaultMaxLineChars.
	MaxLineChars int
	// MaxWriteChars bounds a message written; 0 means MaxLineChars.
	MaxWriteChars int
	// MaxInflight bounds the requests served at once; 0 means
	// DefaultMaxInflight. 1 answers requests one at a time, in order.
	MaxInflight int
	// WriteTimeout bounds one write; 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// IdleTimeout closes the connection once no request has been in
	// flight and nothing has been read for this long; 0 means never.
	IdleTimeout time.Duration
	// RequestsOnly makes this end a server whose peer only sends
	// requests (the admin API): a line that cannot be a request is
	// answered with invalid_params (id null when no id can be read)
	// instead of ending the connection, a request without an id is
	// answered with id null, and an over-long line is answered with
	// payload_too_large before the connection closes.
	RequestsOnly bool
	// Logger receives methods and framing problems, never params or
	// results; nil discards.
	Logger *slog.Logger
}

// Peer is one end of a connection.
type Peer struct {
	rw io.ReadWriteCloser
	o  Options

	writeMu sync.Mutex

	mu         sync.Mutex
	nextID     int64
	calls      map[int64]chan response       // guarded by mu
	serving    map[string]context.CancelFunc // request id → cancel; guarded by mu
	closed     bool                          // guarded by mu
	refused    error                         // the other end's refusal of the connection; guarded by mu
	lastActive time.Time                     // guarded by mu (IdleTimeout only)
	idle       *time.Timer                   // guarded by mu (IdleTimeout only)
	failing    *time.Timer                   // closes the peer after a failed write; guarded by mu
	done       chan struct{}
	slots      chan struct{}
	wg         sync.WaitGroup
	closeErr   error // guarded by mu
}

type message struct {
	JSONRPC string             `json:"jsonrpc"`
	ID      json.RawMessage    `json:"id,omitempty"`
	Method  string             `json:"method,omitempty"`
	Params  json.RawMessage    `json:"params,omitempty"`
	Result  json.RawMessage    `json:"result,omitempty"`
	Error   *errcode.WireError `json:"error,omitempty"`
}

type response struct {
	result json.RawMessage
	err    error
}

var nullID = json.RawMessage("null")

// New returns a peer on rw; opts may be nil. Call Run to read.
func New(rw io.ReadWriteCloser, opts *Options) *Peer {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxLineChars <= 0 {
		o.MaxLineChars = DefaultMaxLineChars
	}
	if o.MaxWriteChars <= 0 {
		o.MaxWriteChars = o.MaxLineChars
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return &Peer{
		rw: rw, o: o,
		calls: map[int64]chan response{}, serving: map[string]context.CancelFunc{},
		done: make(chan struct{}), slots: make(chan struct{}, o.MaxInflight),
	}
}

// Done is closed when the connection has ended.
func (p *Peer) Done() <-chan struct{} { return p.done }

// Run reads messages until the connection ends (or ctx does), then fails
// the calls in flight with ErrClosed, cancels the requests being served
// and waits for their handlers. It returns the reason the connection
// ended (nil for the peer's clean end of input).
func (p *Peer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			p.Close()
		case <-p.done:
		}
	}()
	if p.o.IdleTimeout > 0 {
		p.mu.Lock()
		p.lastActive = time.Now()
		p.idle = time.AfterFunc(p.o.IdleTimeout, p.idleCheck)
		p.mu.Unlock()
	}
	lr := transport.NewLineReader(p.rw, p.o.MaxLineChars)
	var err error
	for {
		var line []byte
		line, err = lr.ReadLine()
		if err != nil {
			if p.o.RequestsOnly && errors.Is(err, transport.ErrLineTooLong) {
				p.writeError(nullID, errcode.Newf(errcode.PayloadTooLarge, "request over %d characters", p.o.MaxLineChars))
			}
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		p.touch()
		m, bad := p.decode(line)
		if bad != nil {
			if !p.o.RequestsOnly {
				err = bad
				break
			}
			continue
		}
		p.dispatch(ctx, m)
	}
	p.Close()
	p.wg.Wait()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// decode reads one message. A RequestsOnly peer answers what is not a
// request itself and reports it handled (bad != nil, nothing to
// dispatch); any other peer ends the connection on a bad message.
func (p *Peer) decode(line []byte) (m message, bad error) {
	if jerr := json.Unmarshal(line, &m); jerr != nil {
		if p.o.RequestsOnly {
			p.writeError(nullID, errcode.New(errcode.InvalidParams, "the request is not a JSON object"))
		}
		return m, fmt.Errorf("rpc: bad message: %w", jerr)
	}
	if !p.o.RequestsOnly {
		return m, nil
	}
	if len(m.ID) > 0 {
		switch b := bytes.TrimSpace(m.ID); {
		case bytes.Equal(b, nullID):
			m.ID = nullID
		case len(b) > 0 && (b[0] == '"' || b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
			m.ID = b
		default:
			p.writeError(nullID, errcode.New(errcode.InvalidParams, `"id" must be a number or a string`))
			return m, errors.New("rpc: bad id")
		}
	}
	if m.Method == "" {
		id := m.ID
		if len(id) == 0 {
			id = nullID
		}
		p.writeError(id, errcode.New(errcode.InvalidParams, `the request has no "method"`))
		return m, errors.New("rpc: no method")
	}
	if len(m.ID) == 0 && m.Method != cancelMethod {
		// Every line is a request here: one without an id is answered
		// too, with id null.
		m.ID = nullID
	}
	return m, nil
}

func (p *Peer) dispatch(ctx context.Context, m message) {
	switch {
	case m.Method == cancelMethod:
		var c struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m.Params, &c) == nil {
			p.mu.Lock()
			if cancel := p.serving[string(c.ID)]; cancel != nil {
				cancel()
			}
			p.mu.Unlock()
		}
	case m.Method != "" && len(m.ID) == 0:
		if p.o.Notify != nil {
			p.o.Notify(m.Method, m.Params)
		}
	case m.Method != "":
		p.serve(ctx, m)
	case m.Error != nil && bytes.Equal(bytes.TrimSpace(m.ID), nullID):
		// An error for no request: the other end refuses the connection
		// (busy, a line too long) and closes it. Every call fails with it.
		p.refuse(FromWire(*m.Error))
	default:
		var id int64
		if json.Unmarshal(m.ID, &id) != nil {
			return
		}
		p.mu.Lock()
		ch := p.calls[id]
		delete(p.calls, id)
		p.mu.Unlock()
		if ch == nil {
			return
		}
		if m.Error != nil {
			ch <- response{err: FromWire(*m.Error)}
		} else {
			ch <- response{result: m.Result}
		}
	}
}

func (p *Peer) serve(ctx context.Context, m message) {
	if p.o.Handler == nil {
		p.reply(m.ID, nil, errcode.New(errcode.Unsupported, "this end serves no requests"))
		return
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	key := string(m.ID)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		cancel()
		<-p.slots
		return
	}
	p.serving[key] = cancel
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer func() { <-p.slots }()
		defer func() {
			p.mu.Lock()
			delete(p.serving, key)
			p.lastActive = time.Now()
			p.mu.Unlock()
			cancel()
		}()
		res, err := p.run(cctx, m.Method, m.Params)
		p.reply(m.ID, res, err)
	}()
}

func (p *Peer) run(ctx context.Context, method string, params json.RawMessage) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.o.Logger.Error("rpc: handler panicked", "method", method, "panic", fmt.Sprint(r))
			res, err = nil, errcode.New(errcode.Internal, "internal error")
		}
	}()
	return p.o.Handler(ctx, method, params)
}

func (p *Peer) reply(id json.RawMessage, res any, err error) {
	m := message{JSONRPC: "2.0", ID: id}
	if err == nil {
		b, merr := json.Marshal(res)
		if merr != nil {
			err = errcode.Wrap(errcode.Internal, "the result could not be encoded", merr)
		} else {
			m.Result = b
		}
	}
	if err != nil {
		w := errcode.From(err).Wire()
		m.Error = &w
	}
	if werr := p.write(m); werr != nil {
		p.o.Logger.Debug("rpc: reply not sent", "err", werr)
	}
}

// writeError answers a line that is not a request (RequestsOnly).
func (p *Peer) writeError(id json.RawMessage, e *errcode.Error) {
	w := e.Wire()
	if err := p.write(message{JSONRPC: "2.0", ID: id, Error: &w}); err != nil {
		p.o.Logger.Debug("rpc: error reply not sent", "err", err)
	}
}

func (p *Peer) write(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if transport.UTF16Len(b) > p.o.MaxWriteChars {
		return fmt.Errorf("rpc: message of %d bytes over the limit", len(b))
	}
	b = append(b, '\n')
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	select {
	case <-p.done:
		return ErrClosed
	default:
	}
	type deadliner interface{ SetWriteDeadline(time.Time) error }
	if d, ok := p.rw.(deadliner); ok {
		d.SetWriteDeadline(time.Now().Add(p.o.WriteTimeout))
	}
	if _, err := p.rw.Write(b); err != nil {
		p.writeFailed()
		return fmt.Errorf("rpc: write: %w", err)
	}
	return nil
}

// writeFailed closes the peer writeFailGrace after a failed write; the
// reader meanwhile reads what the other end sent (an end of input closes
// the peer at once).
func (p *Peer) writeFailed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.failing != nil {
		return
	}
	p.failing = time.AfterFunc(writeFailGrace, func() { p.Close() })
}

// touch notes activity for IdleTimeout.
func (p *Peer) touch() {
	if p.o.IdleTimeout <= 0 {
		return
	}
	p.mu.Lock()
	p.lastActive = time.Now()
	p.mu.Unlock()
}

// idleCheck closes a connection that has been quiet for IdleTimeout with
// nothing in flight, and otherwise looks again when it could be.
func (p *Peer) idleCheck() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	quiet := time.Since(p.lastActive)
	if len(p.serving) > 0 || quiet < p.o.IdleTimeout {
		wait := p.o.IdleTimeout - quiet
		if len(p.serving) > 0 || wait <= 0 {
			wait = p.o.IdleTimeout
		}
		p.idle.Reset(wait)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.o.Logger.Debug("rpc: idle connection closed")
	p.Close()
}

// refuse ends the connection with the other end's refusal: calls in
// flight, and every call after, fail with err.
func (p *Peer) refuse(err *errcode.Error) {
	p.mu.Lock()
	if p.refused == nil {
		p.refused = err
	}
	p.mu.Unlock()
	p.Close()
}

// closedErrLocked is why a call cannot be made: the refusal, else ErrClosed.
func (p *Peer) closedErrLocked() error {
	if p.refused != nil {
		return p.refused
	}
	return ErrClosed
}

// Call sends a request and decodes its result into result (which may be
// nil). When ctx ends first, the peer is told to cancel ("$/cancel") and
// ctx's error is returned. An error response is returned as
// *errcode.Error; so is a refusal of the whole connection (an error
// response with id null, e.g. busy), for this call and every later one.
func (p *Peer) Call(ctx context.Context, method string, params, result any) error {
	return p.CallGrace(ctx, 0, method, params, result)
}

// CallGrace is Call that, when ctx ends, tells the peer to cancel and
// then waits up to grace for the peer's answer (a cancelled call's own
// result) before giving up with ctx's error.
func (p *Peer) CallGrace(ctx context.Context, grace time.Duration, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("rpc: %s: %w", method, err)
	}
	ch := make(chan response, 1)
	p.mu.Lock()
	if p.closed {
		err := p.closedErrLocked()
		p.mu.Unlock()
		return err
	}
	p.nextID++
	id := p.nextID
	p.calls[id] = ch
	p.mu.Unlock()
	idRaw, _ := json.Marshal(id)
	if err := p.write(message{JSONRPC: "2.0", ID: idRaw, Method: method, Params: raw}); err != nil {
		p.forget(id)
		// The connection is over; its reader says why within
		// writeFailGrace (a refusal already sent, or just the end).
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
		refused := p.refused
		p.mu.Unlock()
		switch {
		case refused != nil:
			return refused
		case errors.Is(err, ErrClosed):
			return ErrClosed
		}
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	decode := func(r response) error {
		if r.err != nil {
			return r.err
		}
		if result != nil && len(r.result) > 0 {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("rpc: %s: bad result: %w", method, err)
			}
		}
		return nil
	}
	select {
	case r := <-ch:
		return decode(r)
	case <-ctx.Done():
	}
	cp, _ := json.Marshal(map[string]json.RawMessage{"id": idRaw})
	p.write(message{JSONRPC: "2.0", Method: cancelMethod, Params: cp})
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case r := <-ch:
			return decode(r)
		case <-t.C:
		}
	}
	p.forget(id)
	return ctx.Err()
}

func (p *Peer) forget(id int64) {
	p.mu.Lock()
	delete(p.calls, id)
	p.mu.Unlock()
}

// Notify sends a notification.
func (p *Peer) Notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("rpc: %s: %w", method, err)
	}
	return p.write(message{JSONRPC: "2.0", Method: method, Params: raw})
}

// Close ends the connection: calls in flight fail with ErrClosed and
// requests being served are cancelled. It does not wait for handlers
// (Run does).
func (p *Peer) Close() error {
	p.mu.Lock()
	if p.closed {
		err := p.closeErr
		p.mu.Unlock()
		return err
	}
	p.closed = true
	calls := p.calls
	p.calls = map[int64]chan response{}
	failed := p.closedErrLocked()
	for _, cancel := range p.serving {
		cancel()
	}
	if p.idle != nil {
		p.idle.Stop()
	}
	if p.failing != nil {
		p.failing.Stop()
	}
	close(p.done)
	p.mu.Unlock()
	// Closing the stream first unblocks a write stuck on a peer that
	// stopped reading.
	err := p.rw.Close()
	p.mu.Lock()
	p.closeErr = err
	p.mu.Unlock()
	for _, ch := range calls {
		ch <- response{err: failed}
	}
	return p.closeErr
}

// FromWire turns an error object back into an *errcode.Error: the code
// from data.agentosCode (unknown codes become internal), the text
// without its "<code>: " prefix, and the details and ids.
func FromWire(w errcode.WireError) *errcode.Error {
	code := errcode.Parse(w.Data.AgentosCode)
	text := strings.TrimPrefix(w.Message, w.Data.AgentosCode+": ")
	return &errcode.Error{Code: code, Text: text, Details: w.Data.Details, SessionID: w.Data.SessionID, TaskID: w.Data.TaskID}
}
