package acptestclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// rawConn is a caller channel spoken line by line, for what the SDK never
// sends: spoofed initialize fields, methods of other protocols, replies
// to requests the agent never made.
type rawConn struct {
	nc    net.Conn
	lines chan []byte   // read by the reader goroutine; closed when it ends
	stop  chan struct{} // closed by close
	wg    sync.WaitGroup
	once  sync.Once
}

// maxRawLines bounds what a raw connection buffers unread.
const maxRawLines = 4096

func newRawConn(nc net.Conn) *rawConn {
	rc := &rawConn{nc: nc, lines: make(chan []byte, maxRawLines), stop: make(chan struct{})}
	rc.wg.Add(1)
	go func() {
		defer rc.wg.Done()
		defer close(rc.lines)
		lr := transport.NewLineReader(nc, transport.MaxLineChars)
		for {
			line, err := lr.ReadLine()
			if err != nil {
				return
			}
			select {
			case rc.lines <- bytes.Clone(line):
			case <-rc.stop:
				return
			}
		}
	}()
	return rc
}

func (rc *rawConn) close() {
	rc.once.Do(func() {
		close(rc.stop)
		rc.nc.Close()
	})
	rc.wg.Wait()
}

// next returns the next line, or closed when the peer ended the
// connection, or neither when d passed.
func (rc *rawConn) next(ctx context.Context, d time.Duration) (line []byte, closed bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case l, ok := <-rc.lines:
		return l, !ok
	case <-t.C:
		return nil, false
	case <-ctx.Done():
		return nil, false
	}
}

// RawOpenOut is raw_open's result: the runtime's first line.
type RawOpenOut struct {
	Opened    bool   `json:"opened"`
	Reason    string `json:"reason"`
	RequestID string `json:"requestId"`
	Line      any    `json:"line"`
	Outcome
}

func (r *runner) rawOpen(ctx context.Context, op *Op) (any, error) {
	out := &RawOpenOut{}
	nc, err := transport.Dial(ctx, r.env.CallerSocket)
	if err != nil {
		return out, err
	}
	rc := newRawConn(nc)
	line, closed := rc.next(ctx, readWait(op, 10*time.Second))
	if line == nil {
		rc.close()
		if closed {
			return out, errors.New("the runtime closed the channel before its first line")
		}
		return out, errors.New("no first line in time")
	}
	out.Line = r.reveal(op.As, line)
	var m struct {
		Method string `json:"method"`
		Error  *struct {
			Data struct {
				Reason    string `json:"reason"`
				RequestID string `json:"requestId"`
			} `json:"data"`
		} `json:"error"`
	}
	json.Unmarshal(line, &m)
	switch {
	case m.Error != nil:
		out.Reason, out.RequestID = m.Error.Data.Reason, m.Error.Data.RequestID
		rc.close()
	case m.Method == "_org.agentos/channel":
		out.Opened = true
		r.raws[op.As] = rc
		r.lastRaw = op.As
	default:
		rc.close()
	}
	return out, nil
}

func readWait(op *Op, def time.Duration) time.Duration {
	if op.ReadMs > 0 {
		return time.Duration(op.ReadMs) * time.Millisecond
	}
	return def
}

// parseLine is the line as JSON, or as a string when it is not JSON.
func parseLine(line []byte) any {
	var v any
	if json.Unmarshal(line, &v) == nil {
		return v
	}
	return string(line)
}

func (r *runner) rawConnOf(op *Op) (*rawConn, string, error) {
	name := op.Conn
	if name == "" {
		name = r.lastRaw
	}
	rc, ok := r.raws[name]
	if !ok {
		return nil, name, planErrorf("no raw channel %q", name)
	}
	return rc, name, nil
}

// RawOut is raw's result: the response to the message sent (when it had
// an id), and whatever else came meanwhile.
type RawOut struct {
	Response any `json:"response"`
	// Other are the other lines: notifications, requests of the agent,
	// responses to other ids.
	Other []any `json:"other"`
	// Closed says the runtime ended the connection.
	Closed bool `json:"closed"`
	Outcome
}

func (r *runner) raw(ctx context.Context, op *Op) (any, error) {
	rc, _, err := r.rawConnOf(op)
	if err != nil {
		return nil, err
	}
	out := &RawOut{Other: []any{}}
	var msg []byte
	if op.Line != nil {
		msg = []byte(*op.Line)
	} else {
		msg = op.Send
	}
	msg, err = r.substitute(msg)
	if err != nil {
		return out, err
	}
	// A request (or a reply the agent never asked for) carries an id:
	// wait for the response with that id.
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	json.Unmarshal(msg, &head)
	wantID := normID(head.ID)
	if _, err := rc.nc.Write(append(bytes.Clone(msg), '\n')); err != nil {
		out.Closed = true
		return out, err
	}
	deadline := time.Now().Add(readWait(op, DefaultReadMs*time.Millisecond))
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return out, nil
		}
		line, closed := rc.next(ctx, left)
		if closed {
			out.Closed = true
			return out, nil
		}
		if line == nil {
			return out, nil
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		json.Unmarshal(line, &m)
		if wantID != "" && head.Method != nil && m.Method == nil && normID(m.ID) == wantID {
			out.Response = r.reveal(op.As, line)
			return out, nil
		}
		out.Other = append(out.Other, r.reveal(op.As, line))
	}
}

// normID is a JSON-RPC id in one canonical text ("" for none or null).
func normID(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// DialOut is dial's result: what the socket did with a connection from
// this app.
type DialOut struct {
	// Result is refused (nothing listens), reset (closed with the line
	// this app sent still unread), epipe (closed before the line could be
	// written), eof (closed, nothing unread), data (a line came back) or
	// open (nothing happened in time).
	Result string `json:"result"`
	// ClosedUnread: the socket closed the connection without reading
	// what this app sent (reset or epipe), or, when nothing was sent,
	// closed it without a byte.
	ClosedUnread bool `json:"closedUnread"`
	Line         any  `json:"line"`
	BytesRead    int  `json:"bytesRead"`
	Outcome
}

// socketName resolves dial's socket: caller, admin and acp are the
// runtime's sockets (named like the caller socket, prefix included);
// app:PKG/SERVER is a provider app's server, aci:PKG/SERVER a controlled
// app's ACI service (dial frames its line as an ACIS request); anything
// else is a socket name.
func (r *runner) socketName(s string) string {
	const callerBase = "agentos-caller"
	if app := r.appSocket(s); app != "" {
		return app
	}
	if s != "admin" && s != "acp" {
		if s == "caller" {
			return r.env.CallerSocket
		}
		return s
	}
	base := r.env.CallerSocket
	if i := strings.LastIndex(base, callerBase); i >= 0 {
		return base[:i] + "agentos-" + s + base[i+len(callerBase):]
	}
	if s == "admin" {
		return transport.Names{}.Admin()
	}
	return transport.Names{}.ACP()
}

func (r *runner) dial(ctx context.Context, op *Op) (any, error) {
	out := &DialOut{}
	nc, err := transport.Dial(ctx, r.socketName(op.Socket))
	if err != nil {
		out.Result = "refused"
		return out, nil
	}
	defer nc.Close()
	framed := strings.HasPrefix(op.Socket, "aci:")
	if op.Line != nil {
		line, err := r.substitute([]byte(*op.Line))
		if err != nil {
			return out, err
		}
		if framed {
			err = wire.WriteFrame(nc, wire.MagicRequest, line)
		} else {
			_, err = nc.Write(append(line, '\n'))
		}
		if err != nil {
			out.Result = classify(err)
			out.ClosedUnread = out.Result == "epipe" || out.Result == "reset"
			return out, nil
		}
	}
	nc.SetReadDeadline(time.Now().Add(readWait(op, DefaultReadMs*time.Millisecond)))
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var line []byte
	if framed {
		// An ACI socket answers with one ACIR frame, not a line.
		line, err = wire.ReadFrame(nc, wire.MagicResponse)
	} else {
		line, err = transport.NewLineReader(nc, transport.MaxLineChars).ReadLine()
	}
	out.BytesRead = len(line)
	switch {
	case err == nil:
		out.Result = "data"
		out.Line = r.reveal(op.As, line)
	default:
		out.Result = classify(err)
	}
	out.ClosedUnread = out.Result == "reset" || out.Result == "epipe" || (op.Line == nil && out.Result == "eof" && out.BytesRead == 0)
	return out, nil
}

// classify names how a socket operation ended.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.EPIPE):
		return "epipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.As(err, &ne) && ne.Timeout():
		return "open"
	}
	return "error"
}

// RawConnectOut is raw_connect's result.
type RawConnectOut struct {
	Connected bool `json:"connected"`
	// Refused: nothing listens on the socket.
	Refused bool `json:"refused"`
	Outcome
}

// rawConnect opens a line connection to any socket without reading a
// first line: the desktop socket (pairing handshake first) or the admin
// socket (its JSON-lines requests).
func (r *runner) rawConnect(ctx context.Context, op *Op) (any, error) {
	nc, err := transport.Dial(ctx, r.socketName(op.Socket))
	if err != nil {
		return &RawConnectOut{Refused: true}, nil
	}
	r.raws[op.As] = newRawConn(nc)
	r.lastRaw = op.As
	return &RawConnectOut{Connected: true}, nil
}

// RawReadOut is raw_read's result: the next line, or how the wait ended.
type RawReadOut struct {
	Line   any  `json:"line"`
	Closed bool `json:"closed"`
	Outcome
}

func (r *runner) rawRead(ctx context.Context, op *Op) (any, error) {
	rc, _, err := r.rawConnOf(op)
	if err != nil {
		return nil, err
	}
	line, closed := rc.next(ctx, readWait(op, DefaultReadMs*time.Millisecond))
	out := &RawReadOut{Closed: closed}
	if line != nil {
		out.Line = r.reveal(op.As, line)
	}
	return out, nil
}
