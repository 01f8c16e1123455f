package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/rpc"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// ErrUnreachable means nothing answers on the admin socket: the runtime
// is not running (or runs with another socket prefix).
var ErrUnreachable = errors.New("admin: runtime not reachable")

// ErrNoReply means the runtime closed the connection without answering:
// the peer uid is not admitted, or the runtime went away mid-call.
var ErrNoReply = errors.New("admin: the runtime closed the connection without a reply")

// Client calls the admin API over one connection. Calls are serialized.
type Client struct {
	conn net.Conn
	lr   *transport.LineReader

	mu     sync.Mutex // serializes calls; guards next
	next   int64
	broken error // set when the stream can no longer be trusted
}

// Dial connects to the admin socket name (transport.Names.Admin()).
// A socket nobody listens on is ErrUnreachable.
func Dial(ctx context.Context, name string) (*Client, error) {
	c, err := transport.Dial(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return &Client{conn: c, lr: transport.NewLineReader(c, MaxResultBytes)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Call calls method with params (nil for none) and unmarshals the result
// into result (nil to discard). A refusal of the runtime is returned as
// *errcode.Error, so errors.Is(err, errcode.Forbidden) works.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.CallRaw(ctx, method, params)
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("admin: %s: decode result: %w", method, err)
	}
	return nil
}

// CallRaw is Call returning the result's JSON as received.
func (c *Client) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, c.broken
	}
	c.next++
	id := c.next
	if params == nil {
		params = struct{}{}
	}
	line, err := json.Marshal(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params"`
	}{id, method, params})
	if err != nil {
		return nil, fmt.Errorf("admin: %s: encode params: %w", method, err)
	}
	line = append(line, '\n')

	// Cancellation unblocks the read by expiring the deadline.
	if d, ok := ctx.Deadline(); ok {
		c.conn.SetDeadline(d)
	} else {
		c.conn.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if _, err := c.conn.Write(line); err != nil {
		return nil, c.fail(ctx, method, err)
	}
	b, err := c.lr.ReadLine()
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	var resp struct {
		ID     json.RawMessage    `json:"id"`
		Result json.RawMessage    `json:"result"`
		Error  *errcode.WireError `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		c.broken = fmt.Errorf("admin: %s: malformed response", method)
		return nil, c.broken
	}
	if resp.Error != nil {
		e := FromWire(*resp.Error)
		if string(resp.ID) == "null" {
			// A connection-level refusal (busy, too large): the server
			// may close the stream next.
			c.broken = e
		}
		return nil, e
	}
	if string(resp.ID) != fmt.Sprint(id) {
		c.broken = fmt.Errorf("admin: %s: response for another request", method)
		return nil, c.broken
	}
	if len(resp.Result) == 0 {
		resp.Result = json.RawMessage("null")
	}
	return resp.Result, nil
}

func (c *Client) fail(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		c.broken = fmt.Errorf("admin: %s: %w", method, ctx.Err())
		return c.broken
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
		c.broken = fmt.Errorf("admin: %s: %w", method, ErrNoReply)
		return c.broken
	}
	c.broken = fmt.Errorf("admin: %s: %w", method, err)
	return c.broken
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// FromWire turns a wire error back into an *errcode.Error: the code
// from data.agentosCode (unknown codes become internal), the text
// without its "<code>: " prefix, and the details.
func FromWire(w errcode.WireError) *errcode.Error { return rpc.FromWire(w) }
