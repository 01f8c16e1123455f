package plugin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// MaxMessageChars bounds one MCP message on an app's socket: 65,536
// UTF-16 code units, newline excluded (spec §4.9, the plugin channel's
// single-message limit).
const MaxMessageChars = 65536

// headBytes is how much of an over-long line is kept to find its id.
const headBytes = 512

// writeTimeout bounds one write, so a peer that stops reading cannot
// block a handler or a call forever.
const writeTimeout = 30 * time.Second

// Transport is an mcp.Transport over one stream connection (a unix
// socket, or any io.ReadWriteCloser): newline-delimited JSON-RPC, one
// message per line, each at most MaxChars UTF-16 code units.
//
// The transport never lets a peer's message grow memory past the limit
// and never loses its place in the stream:
//
//   - A line over the limit is skipped to its newline (only its first
//     bytes are kept, to read its id). An over-long response becomes a
//     -32603 error response for the same id; an over-long request with an
//     id is answered with -32603 by the transport itself; anything else is
//     dropped. The connection stays open.
//   - A line that is not JSON-RPC is answered with -32700 (id null) when
//     the transport serves, and dropped when it is a client.
//   - A message this side would send over the limit is not sent: a
//     response is replaced by a -32603 error response, a request fails
//     with ErrMessageTooLarge.
type Transport struct {
	// Conn is the stream. Closing the transport's connection closes it.
	Conn io.ReadWriteCloser
	// MaxChars bounds one message; 0 means MaxMessageChars.
	MaxChars int
	// Serving marks the server side of the connection (it answers lines
	// it cannot parse; a client drops them).
	Serving bool
	// DrainOnEOF holds the end of the input back from the MCP session
	// until every request read before it was answered (or the connection
	// closed), so a client that writes its requests and closes its end
	// (`printf '…' | app mcp --stdio`) still gets every answer.
	DrainOnEOF bool
}

var _ mcp.Transport = (*Transport)(nil)

// ErrMessageTooLarge means a request was not sent because it is over the
// message limit: it had no effect.
var ErrMessageTooLarge = errors.New("plugin: message exceeds the size limit")

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	if t.Conn == nil {
		return nil, errors.New("plugin: transport without a connection")
	}
	max := t.MaxChars
	if max <= 0 {
		max = MaxMessageChars
	}
	c := &conn{
		rwc:     t.Conn,
		frames:  newFrameReader(t.Conn, max),
		max:     max,
		serving: t.Serving,
		closed:  make(chan struct{}),
	}
	if t.DrainOnEOF {
		c.unanswered = map[jsonrpc.ID]bool{}
		c.answered = make(chan struct{}, 1)
	}
	return c, nil
}

// conn is one framed JSON-RPC connection.
type conn struct {
	rwc     io.ReadWriteCloser
	frames  *frameReader // used by Read only (jsonrpc2 reads from one goroutine)
	max     int
	serving bool

	writeMu sync.Mutex // serializes whole lines on rwc

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error

	dropped atomic.Int64 // lines dropped or answered by the transport

	// With DrainOnEOF: the requests read and not yet answered, and a
	// signal for each answer. pendingMu guards unanswered.
	pendingMu  sync.Mutex
	unanswered map[jsonrpc.ID]bool
	answered   chan struct{}
}

// track notes a request read from the peer (DrainOnEOF only).
func (c *conn) track(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && c.unanswered != nil && req.ID.IsValid() {
		c.pendingMu.Lock()
		c.unanswered[req.ID] = true
		c.pendingMu.Unlock()
	}
}

// settle notes an answer written to the peer (DrainOnEOF only).
func (c *conn) settle(msg jsonrpc.Message) {
	if resp, ok := msg.(*jsonrpc.Response); ok && c.unanswered != nil {
		c.pendingMu.Lock()
		delete(c.unanswered, resp.ID)
		c.pendingMu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
}

// drain waits, at the end of the input, until every request read was
// answered, the connection closed or ctx ended.
func (c *conn) drain(ctx context.Context) {
	for {
		c.pendingMu.Lock()
		n := len(c.unanswered)
		c.pendingMu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *conn) SessionID() string { return "" }

// Read returns the next message the peer sent, handling over-long and
// malformed lines as the Transport doc says.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, over, err := c.frames.next()
		if errors.Is(err, io.EOF) && c.unanswered != nil {
			c.drain(ctx)
		}
		if err != nil {
			select {
			case <-c.closed:
				return nil, io.EOF
			default:
			}
			return nil, err
		}
		if over != nil {
			if msg := c.oversize(ctx, over); msg != nil {
				return msg, nil
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		msg, err := decodeMessage(line)
		if err != nil {
			c.dropped.Add(1)
			if c.serving {
				c.writeRaw(ctx, errorLine(nil, jsonrpc.CodeParseError, "the line is not a JSON-RPC message"))
			}
			continue
		}
		c.track(msg)
		return msg, nil
	}
}

// oversize handles a line over the limit: a response becomes an error
// response for its id; a request with an id is answered here.
func (c *conn) oversize(ctx context.Context, o *oversized) jsonrpc.Message {
	c.dropped.Add(1)
	id, isRequest, ok := headID(o.head)
	text := fmt.Sprintf("message of %d bytes exceeds the limit of %d characters", o.bytes, c.max)
	switch {
	case !ok:
		return nil
	case isRequest:
		c.writeRaw(ctx, errorLine(id, jsonrpc.CodeInternalError, text))
		return nil
	default:
		jid, err := jsonrpc.MakeID(id)
		if err != nil || !jid.IsValid() {
			return nil
		}
		return &jsonrpc.Response{ID: jid, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: text}}
	}
}

// Write sends one message as one line.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if transport.UTF16Len(data) > c.max {
		switch m := msg.(type) {
		case *jsonrpc.Response:
			data, err = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
				Code:    jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("response of %d characters exceeds the limit of %d", transport.UTF16Len(data), c.max),
			}})
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("write: %w", ErrMessageTooLarge)
		}
	}
	err = c.writeRaw(ctx, data)
	c.settle(msg)
	return err
}

func (c *conn) writeRaw(ctx context.Context, data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	type deadliner interface{ SetWriteDeadline(time.Time) error }
	if d, ok := c.rwc.(deadliner); ok {
		deadline := time.Now().Add(writeTimeout)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		d.SetWriteDeadline(deadline)
	}
	buf := make([]byte, 0, len(data)+1)
	buf = append(append(buf, data...), '\n')
	if _, err := c.rwc.Write(buf); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// Close closes the stream; it unblocks a Read in progress.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.rwc.Close()
	})
	return c.closeErr
}

// errorLine is an encoded JSON-RPC error response without its newline
// (writeRaw adds it); id nil means null.
func errorLine(id any, code int64, text string) []byte {
	raw, err := json.Marshal(id)
	if err != nil {
		raw = nil
	}
	return bytes.TrimSuffix(errcode.ErrorLine(raw, errcode.Protocol(int(code), text)), []byte("\n"))
}

// oversized describes a line over the limit.
type oversized struct {
	head  []byte // the first bytes of the line
	bytes int    // its length in bytes, without the newline
}

// frameReader splits a stream into lines of at most max UTF-16 code units.
// Memory is bounded by the limit: an over-long line is skipped to its
// newline, keeping only its head.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	eof bool
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64*1024), max: max}
}

// next returns the next line without its terminator ("\n" or "\r\n"), or
// the description of an over-long line. The line is valid until the next
// call. At the end of the stream it returns io.EOF (a final line without
// a newline is returned first).
func (f *frameReader) next() (line []byte, over *oversized, err error) {
	if f.eof {
		return nil, nil, io.EOF
	}
	f.buf = f.buf[:0]
	// A UTF-16 code unit takes at most 3 bytes of UTF-8, so a longer byte
	// string can never be within the limit (+1 for a '\r').
	maxBytes := 3*f.max + 1
	total := 0
	skipping := false
	for {
		frag, rerr := f.r.ReadSlice('\n')
		total += len(frag)
		if !skipping {
			if len(f.buf)+len(frag) > maxBytes+1 {
				skipping = true
				if n := headBytes - len(f.buf); n > 0 {
					f.buf = append(f.buf, frag[:min(n, len(frag))]...)
				}
				f.buf = f.buf[:min(len(f.buf), headBytes)]
			} else {
				f.buf = append(f.buf, frag...)
			}
		}
		switch {
		case rerr == nil, errors.Is(rerr, io.EOF) && total > 0:
			if rerr != nil {
				f.eof = true
			}
			if rerr == nil {
				total-- // the newline
			}
			if skipping {
				return nil, &oversized{head: f.buf, bytes: total}, nil
			}
			l := f.buf
			if rerr == nil {
				l = l[:len(l)-1]
			}
			if n := len(l); n > 0 && l[n-1] == '\r' {
				l = l[:n-1]
			}
			if transport.UTF16Len(l) > f.max {
				return nil, &oversized{head: l[:min(len(l), headBytes)], bytes: total}, nil
			}
			return l, nil, nil
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		default:
			return nil, nil, rerr
		}
	}
}

// headID reads the "id" of a JSON-RPC message from the first bytes of its
// line, and whether the message is a request ("method" before the end of
// the head). ok is false when no id was found in the head.
func headID(head []byte) (id any, isRequest, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	tok, err := dec.Token()
	if d, isDelim := tok.(json.Delim); err != nil || !isDelim || d != '{' {
		return nil, false, false
	}
	found := false
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := kt.(string)
		switch key {
		case "id":
			vt, err := dec.Token()
			if err != nil {
				return nil, false, false
			}
			switch v := vt.(type) {
			case string:
				id, found = v, true
			case json.Number:
				f, err := v.Float64()
				if err != nil {
					return nil, false, false
				}
				id, found = f, true
			default:
				return nil, false, false
			}
		case "method":
			isRequest = true
			if _, err := dec.Token(); err != nil {
				return id, isRequest, found
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return id, isRequest, found
			}
		}
	}
	return id, isRequest, found
}
