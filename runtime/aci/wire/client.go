package wire

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// DefaultCallTimeout is a synchronous call's budget when the capability
// declares none (upstream's callTimeoutMs).
const DefaultCallTimeout = 15 * time.Second

// DefaultOpTimeout bounds getCapabilities and ping (upstream's socket
// timeout).
const DefaultOpTimeout = 5 * time.Second

// ErrPeerUID means the socket's listener is not the uid the callee's
// package runs as: another app squats on the name. Nothing was sent.
var ErrPeerUID = errors.New("aci: the socket is held by another uid")

// PeerError is ErrPeerUID with the uids.
type PeerError struct {
	Socket string
	Want   int
	Got    int
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("aci: %s is held by uid %d, not the callee's uid %d", e.Socket, e.Got, e.Want)
}

func (e *PeerError) Unwrap() error { return ErrPeerUID }

// ErrProtocol is a peer that broke the protocol (a bad frame, a response
// for another call, progress that went backwards).
var ErrProtocol = errors.New("aci: protocol violation")

// Client calls one callee's service. Each operation is one connection,
// as upstream's fast path: dial, check the listener's uid, send the
// request, read the answer, close. Safe for concurrent use.
type Client struct {
	// Socket is the service's socket (transport.Names.ACI).
	Socket string
	// UID is the uid the callee's package runs as; the listener must be
	// it (SO_PEERCRED) or nothing is sent.
	UID int
	// CallerPkg is sent as callerPkg. The runtime puts the app on whose
	// behalf it calls; a callee trusts it only from the runtime's uid.
	CallerPkg string
}

// Dial connects to the socket and checks the listener's uid before
// anything is written.
func (c *Client) Dial(ctx context.Context) (net.Conn, error) {
	conn, err := transport.Dial(ctx, c.Socket)
	if err != nil {
		return nil, err
	}
	cred, err := transport.PeerCred(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if cred.UID != c.UID && !(faultinject.Enabled && faultinject.Active(faultinject.ACIPeerUIDUnchecked)) {
		conn.Close()
		return nil, &PeerError{Socket: c.Socket, Want: c.UID, Got: cred.UID}
	}
	return conn, nil
}

// Ping asks whether the callee answers.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultOpTimeout)
	defer cancel()
	r, err := c.roundTrip(ctx, &Request{Method: MethodPing}, nil)
	if err != nil {
		return err
	}
	if !r.Pong {
		return fmt.Errorf("%w: ping answered without pong", ErrProtocol)
	}
	return nil
}

// Capabilities fetches and parses the callee's capabilities. raw is the
// answer as sent; problems are the elements skipped (ParseCapabilities).
func (c *Client) Capabilities(ctx context.Context) (caps []Capability, problems []error, err error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultOpTimeout)
	defer cancel()
	r, err := c.roundTrip(ctx, &Request{Method: MethodGetCapabilities}, nil)
	if err != nil {
		return nil, nil, err
	}
	if !r.Success {
		return nil, nil, r.Err()
	}
	caps, problems = ParseCapabilities(r.Capabilities)
	return caps, problems, nil
}

// Call makes a synchronous call. timeout 0 is DefaultCallTimeout; when it
// passes the connection is closed (the callee's handler sees its context
// end) and the error is an *Error of code Timeout. A failed call is a
// response whose Err is not nil; err is for calls that got no answer.
func (c *Client) Call(ctx context.Context, capability string, params Bundle, timeout time.Duration) (*Response, error) {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, Errorf(Timeout, "no answer from %s within %s", capability, timeout))
	defer cancel()
	return c.roundTrip(ctx, &Request{Method: MethodCall, Capability: capability, Params: params, CallID: NewCallID()}, nil)
}

// CallAsync makes an asynchronous call: onProgress (may be nil) sees each
// progress frame, in order, before CallAsync returns the result. It runs
// until the result or ctx ends (closing the connection, which cancels the
// callee's work).
func (c *Client) CallAsync(ctx context.Context, capability string, params Bundle, onProgress func(Progress)) (*Response, error) {
	return c.roundTrip(ctx, &Request{Method: MethodCallAsync, Capability: capability, Params: params, CallID: NewCallID()}, onProgress)
}

// Do sends any request and returns its final response (progress frames
// go to onProgress). It is the primitive the others use.
func (c *Client) Do(ctx context.Context, req *Request, onProgress func(Progress)) (*Response, error) {
	return c.roundTrip(ctx, req, onProgress)
}

func (c *Client) roundTrip(ctx context.Context, req *Request, onProgress func(Progress)) (*Response, error) {
	if req.CallerPkg == "" {
		req.CallerPkg = c.CallerPkg
	}
	if req.Version == "" {
		req.Version = DefaultRequestVersion
	}
	payload, err := EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	conn, err := c.Dial(ctx)
	if err != nil {
		return nil, Wrap(ServiceUnavailable, err)
	}
	defer conn.Close()
	// The context's end closes the connection: the read below fails at
	// once and the callee sees the close.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := WriteFrame(conn, MagicRequest, payload); err != nil {
		return nil, c.failure(ctx, err)
	}
	last := -1
	for {
		p, err := ReadFrame(conn, MagicResponse)
		if err != nil {
			return nil, c.failure(ctx, err)
		}
		r, err := DecodeResponse(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
		}
		if req.CallID != "" && r.CallID != "" && r.CallID != req.CallID {
			return nil, fmt.Errorf("%w: answer for call %q, not %q", ErrProtocol, clip(r.CallID), req.CallID)
		}
		if r.Progress == nil {
			return r, nil
		}
		if req.Method != MethodCallAsync {
			return nil, fmt.Errorf("%w: progress on a %s", ErrProtocol, req.Method)
		}
		if r.Progress.Percent < last {
			return nil, fmt.Errorf("%w: progress went from %d to %d", ErrProtocol, last, r.Progress.Percent)
		}
		last = r.Progress.Percent
		if onProgress != nil {
			onProgress(*r.Progress)
		}
	}
}

// failure is the error of a round trip that broke: the context's cause
// when it ended (a timeout), else the connection's death.
func (c *Client) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		var e *Error
		if errors.As(cause, &e) {
			return e
		}
		return cause
	}
	if errors.Is(err, ErrBadMagic) || errors.Is(err, ErrFrameSize) {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return Wrap(ConnectionDied, err)
}

// Wrap returns an *Error of code c whose message is err's (errors.Is and
// errors.As see err too).
func Wrap(c Code, err error) error {
	return &wrapped{&Error{Code: c, Raw: int(c), Known: true, Message: err.Error()}, err}
}

type wrapped struct {
	e   *Error
	err error
}

func (w *wrapped) Error() string   { return w.e.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.e, w.err} }

// NewCallID returns a random call id (32 hex characters).
func NewCallID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
