// Package wire is the private protocol between `agentosd serve` and the
// extension host (`agentosd ext`) on transport.Names.Ext(): JSON-RPC 2.0
// messages, one per line, in both directions, with per-call cancellation
// ("$/cancel") and errors in the runtime's one wire shape
// (errcode.WireError).
//
// Both ends check the other's uid with SO_PEERCRED before a byte is
// read; this package only frames and routes messages.
package wire

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

// MaxLineChars bounds one message: a whole catalog push fits (4,096
// tools with their schemas), anything larger is a broken peer.
const MaxLineChars = 16 << 20

// MaxInflight bounds the requests a peer serves at once; more wait.
const MaxInflight = 256

// writeTimeout bounds one write.
const writeTimeout = 30 * time.Second

const cancelMethod = "$/cancel"

// Handler answers a request. Errors should be *errcode.Error; others are
// sent as internal without their text. ctx ends when the peer cancels
// the call or the connection closes.
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// Notify receives a notification. It runs on the reading goroutine, in
// order, and must not block for long.
type Notify func(method string, params json.RawMessage)

// ErrClosed means the connection ended before the answer came.
var ErrClosed = errors.New("wire: connection closed")

// Peer is one end of the connection.
type Peer struct {
	rw     io.ReadWriteCloser
	handle Handler
	notify Notify
	logger *slog.Logger

	writeMu sync.Mutex

	mu       sync.Mutex
	nextID   int64
	calls    map[int64]chan response       // guarded by mu
	serving  map[string]context.CancelFunc // request id → cancel; guarded by mu
	closed   bool                          // guarded by mu
	done     chan struct{}
	slots    chan struct{}
	wg       sync.WaitGroup
	closeErr error // guarded by mu
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

// New returns a peer on rw. Call Run to read; handle may be nil (no
// requests accepted), notify may be nil.
func New(rw io.ReadWriteCloser, handle Handler, notify Notify, logger *slog.Logger) *Peer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Peer{
		rw: rw, handle: handle, notify: notify, logger: logger,
		calls: map[int64]chan response{}, serving: map[string]context.CancelFunc{},
		done: make(chan struct{}), slots: make(chan struct{}, MaxInflight),
	}
}

// Done is closed when the connection has ended.
func (p *Peer) Done() <-chan struct{} { return p.done }

// Run reads messages until the connection ends, then fails the calls in
// flight with ErrClosed, cancels the requests being served and waits for
// their handlers. It returns the reason the connection ended.
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
	lr := transport.NewLineReader(p.rw, MaxLineChars)
	var err error
	for {
		var line []byte
		line, err = lr.ReadLine()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m message
		if jerr := json.Unmarshal(line, &m); jerr != nil {
			err = fmt.Errorf("wire: bad message: %w", jerr)
			break
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
		if p.notify != nil {
			p.notify(m.Method, m.Params)
		}
	case m.Method != "":
		p.serve(ctx, m)
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
			ch <- response{err: fromWire(m.Error)}
		} else {
			ch <- response{result: m.Result}
		}
	}
}

func (p *Peer) serve(ctx context.Context, m message) {
	if p.handle == nil {
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
			p.logger.Error("wire: handler panicked", "method", method, "panic", fmt.Sprint(r))
			res, err = nil, errcode.New(errcode.Internal, "internal error")
		}
	}()
	return p.handle(ctx, method, params)
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
		p.logger.Debug("wire: reply not sent", "err", werr)
	}
}

func (p *Peer) write(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if transport.UTF16Len(b) > MaxLineChars {
		return fmt.Errorf("wire: message of %d bytes over the limit", len(b))
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
		d.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	if _, err := p.rw.Write(b); err != nil {
		p.Close()
		return fmt.Errorf("wire: write: %w", err)
	}
	return nil
}

// Call sends a request and decodes its result into result (which may be
// nil). When ctx ends first, the peer is told to cancel ("$/cancel") and
// ctx's error is returned. An error response is returned as *errcode.Error.
func (p *Peer) Call(ctx context.Context, method string, params, result any) error {
	return p.CallGrace(ctx, 0, method, params, result)
}

// CallGrace is Call that, when ctx ends, tells the peer to cancel and
// then waits up to grace for the peer's answer (a cancelled call's own
// result) before giving up with ctx's error.
func (p *Peer) CallGrace(ctx context.Context, grace time.Duration, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("wire: %s: %w", method, err)
	}
	ch := make(chan response, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.nextID++
	id := p.nextID
	p.calls[id] = ch
	p.mu.Unlock()
	idRaw, _ := json.Marshal(id)
	if err := p.write(message{JSONRPC: "2.0", ID: idRaw, Method: method, Params: raw}); err != nil {
		p.forget(id)
		if errors.Is(err, ErrClosed) {
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
				return fmt.Errorf("wire: %s: bad result: %w", method, err)
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
		return fmt.Errorf("wire: %s: %w", method, err)
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
	for _, cancel := range p.serving {
		cancel()
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
		ch <- response{err: ErrClosed}
	}
	return p.closeErr
}

// fromWire turns an error object back into an *errcode.Error.
func fromWire(w *errcode.WireError) error {
	code := errcode.Parse(w.Data.AgentosCode)
	text := strings.TrimPrefix(w.Message, w.Data.AgentosCode+": ")
	e := errcode.New(code, text)
	if len(w.Data.Details) > 0 {
		e = e.WithDetails(w.Data.Details)
	}
	return e
}
