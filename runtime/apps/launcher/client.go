package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// ErrUnreachable means no launcher answers: the supervisor is not
// running (a runtime started without `agentosd supervise`).
var ErrUnreachable = errors.New("launcher: supervisor not reachable")

// ErrRefused means the launcher closed the connection without answering:
// this process's uid is not the runtime's.
var ErrRefused = errors.New("launcher: connection refused by the supervisor (wrong uid)")

// Client calls a launcher. Each call uses its own connection, so a
// restarted supervisor is simply found again. Safe for concurrent use.
type Client struct {
	socket string
}

// NewClient returns a client of the launcher at socket (SocketName).
func NewClient(socket string) *Client { return &Client{socket: socket} }

// Socket is the launcher socket the client dials.
func (c *Client) Socket() string { return c.socket }

// Start starts pkg's server if needed and returns once it listens.
func (c *Client) Start(ctx context.Context, pkg, server string) (*Proc, error) {
	var p Proc
	if err := c.call(ctx, "start", StartParams{Package: pkg, Server: server}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Stop stops pkg's server, or all of its servers when server is "".
func (c *Client) Stop(ctx context.Context, pkg, server string) (int, error) {
	var r StopResult
	err := c.call(ctx, "stop", StopParams{Package: pkg, Server: server}, &r)
	return r.Stopped, err
}

// List returns the running app processes.
func (c *Client) List(ctx context.Context) ([]Proc, error) {
	var ps []Proc
	err := c.call(ctx, "list", struct{}{}, &ps)
	return ps, err
}

// Run runs one of pkg's debug commands; see Server.Run.
func (c *Client) Run(ctx context.Context, pkg string, args []string, timeout time.Duration) (*RunResult, error) {
	var r RunResult
	if err := c.call(ctx, "run", RunParams{Package: pkg, Args: args, TimeoutMs: timeout.Milliseconds()}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Install installs the bundle at path (absolute, readable by root).
func (c *Client) Install(ctx context.Context, path string) (*apps.InstallResult, error) {
	var r apps.InstallResult
	if err := c.call(ctx, "install", InstallParams{Path: path}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Uninstall removes pkg (its processes are stopped first).
func (c *Client) Uninstall(ctx context.Context, pkg string) (*apps.Package, error) {
	var p apps.Package
	if err := c.call(ctx, "uninstall", UninstallParams{Package: pkg}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Watch subscribes to process and package events. The channel closes
// when ctx ends or the connection drops (the supervisor went away, or
// this watcher fell behind): re-List and watch again.
func (c *Client) Watch(ctx context.Context) (<-chan Event, error) {
	conn, lr, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := roundTrip(ctx, conn, lr, "watch", struct{}{}); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	out := make(chan Event, watcherQueue)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	go func() {
		defer close(out)
		defer stop()
		defer conn.Close()
		for {
			line, err := lr.ReadLine()
			if err != nil {
				return
			}
			var r response
			if json.Unmarshal(line, &r) != nil || r.Event == nil {
				continue
			}
			select {
			case out <- *r.Event:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (c *Client) dial(ctx context.Context) (net.Conn, *transport.LineReader, error) {
	conn, err := transport.Dial(ctx, c.socket)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return conn, transport.NewLineReader(conn, maxResponseBytes), nil
}

func (c *Client) call(ctx context.Context, method string, params, result any) error {
	conn, lr, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	raw, err := roundTrip(ctx, conn, lr, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("launcher: %s: decode result: %w", method, err)
	}
	return nil
}

func roundTrip(ctx context.Context, conn net.Conn, lr *transport.LineReader, method string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params"`
	}{1, method, params})
	if err != nil {
		return nil, fmt.Errorf("launcher: %s: %w", method, err)
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(append(b, '\n')); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("launcher: %s: %w", method, ErrRefused)
		}
		return nil, fmt.Errorf("launcher: %s: %w", method, err)
	}
	line, err := lr.ReadLine()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("launcher: %s: %w", method, ctx.Err())
		}
		return nil, fmt.Errorf("launcher: %s: %w", method, ErrRefused)
	}
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("launcher: %s: malformed response", method)
	}
	if r.Error != nil {
		return nil, fromWire(*r.Error)
	}
	return r.Result, nil
}

// fromWire turns a wire error back into an *errcode.Error.
func fromWire(w errcode.WireError) *errcode.Error {
	return &errcode.Error{Code: errcode.Parse(w.Data.AgentosCode), Text: strings.TrimPrefix(w.Message, w.Data.AgentosCode+": "), Details: w.Data.Details}
}

// Reason returns details.reason of a launcher refusal ("" if none):
// not_installed, no_such_service, no_such_command, bad_args, exited,
// not_listening, socket_taken, spawn_failed, busy, bad_bundle, downgrade,
// abi, shared_user, no_uid, table_corrupt, bad_path.
func Reason(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		if r, ok := e.Details["reason"].(string); ok {
			return r
		}
	}
	return ""
}
