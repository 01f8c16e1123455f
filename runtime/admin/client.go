package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

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

// Client calls the admin API over one connection, on the runtime's RPC
// peer. Calls are serialized.
type Client struct {
	peer *rpc.Peer
	done chan struct{} // closed when the peer's reader returned

	mu sync.Mutex // serializes calls
}

// Dial connects to the admin socket name (transport.Names.Admin()).
// A socket nobody listens on is ErrUnreachable.
func Dial(ctx context.Context, name string) (*Client, error) {
	c, err := transport.Dial(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	cl := &Client{peer: rpc.New(c, &rpc.Options{MaxLineChars: MaxResultBytes + 1024, MaxWriteChars: MaxRequestChars}), done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		cl.peer.Run(context.Background())
	}()
	return cl, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	err := c.peer.Close()
	<-c.done
	return err
}

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

// CallRaw is Call returning the result's JSON as received. When ctx ends
// first the runtime is told to cancel the call.
func (c *Client) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if params == nil {
		params = struct{}{}
	}
	var raw json.RawMessage
	err := c.peer.Call(ctx, method, params, &raw)
	var e *errcode.Error
	switch {
	case err == nil:
	case errors.As(err, &e):
		return nil, e
	case ctx.Err() != nil:
		return nil, fmt.Errorf("admin: %s: %w", method, ctx.Err())
	case errors.Is(err, rpc.ErrClosed):
		// Closed without an answer: the peer uid is not admitted, or the
		// runtime went away mid-call.
		return nil, fmt.Errorf("admin: %s: %w", method, ErrNoReply)
	default:
		return nil, fmt.Errorf("admin: %s: %w", method, err)
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	return raw, nil
}

// FromWire turns a wire error back into an *errcode.Error: the code
// from data.agentosCode (unknown codes become internal), the text
// without its "<code>: " prefix, and the details.
func FromWire(w errcode.WireError) *errcode.Error { return rpc.FromWire(w) }
