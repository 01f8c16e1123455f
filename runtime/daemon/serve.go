package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Peer uids admitted on the desktop ACP socket (spec §4.7).
const (
	uidRoot  = 0
	uidShell = 2000
)

// maxACPConns bounds connections on the ACP socket (spec §4.7: 8).
const maxACPConns = 8

// Gate admits a connection on the ACP socket before any byte of ACP: it
// returns the caller and the stream ACP runs on, or an error, after which
// the connection is closed. It owns conn on success (the stream wraps it).
// Desktop pairing is a Gate that reads the pairing line first.
type Gate func(ctx context.Context, conn *transport.Conn) (engine.Caller, *transport.RPCStream, error)

// errNotAdmitted is a peer the gate refuses; it is closed unread.
var errNotAdmitted = errors.New("daemon: peer not admitted")

// UIDGate admits peers whose uid is root or shell, and also the runtime's
// own uid when ownUID is set, as caller DESKTOP; the connection then
// carries ACP at once.
func UIDGate(ownUID bool) Gate {
	self := os.Getuid()
	return func(_ context.Context, conn *transport.Conn) (engine.Caller, *transport.RPCStream, error) {
		uid := conn.Cred().UID
		if uid != uidRoot && uid != uidShell && !(ownUID && uid == self) {
			return engine.Caller{}, nil, errNotAdmitted
		}
		return engine.Caller{Kind: engine.CallerDesktop, UID: uid, Label: "desktop"}, transport.NewRPCStream(conn, nil), nil
	}
}

// busyLine is what a connection over the limit gets before it is closed.
func busyLine() []byte {
	return errcode.ErrorLine(nil, errcode.New(errcode.Busy, "too many desktop connections").Wire())
}

// Serve runs `agentosd serve` until ctx ends: it opens the runtime,
// listens on the desktop ACP socket, serves each admitted connection with
// the one shared agent, and on ctx's end stops accepting, closes the
// connections (tasks go on until the engine stops them) and closes the
// runtime. ready, when not nil, is called once the socket listens.
func Serve(ctx context.Context, opts *Options, ready func(name string)) error {
	r, err := Open(ctx, opts)
	if err != nil {
		return err
	}
	stopAttached, ownsACP := func() {}, false
	if r.opts.Attach != nil {
		stop, owns, err := r.opts.Attach(ctx, r)
		if err != nil {
			r.Close(ctx)
			return fmt.Errorf("daemon: %w", err)
		}
		stopAttached, ownsACP = stop, owns
	}
	if ownsACP {
		// Desktop pairing listens on the ACP socket (only while desktop
		// access is on); the caller channel is what always listens.
		if ready != nil {
			ready(r.opts.Names.Caller())
		}
		<-ctx.Done()
		r.log.Info("stopping")
		stopAttached()
		return r.Close(ctx)
	}
	gate := r.opts.Gate
	if gate == nil {
		gate = UIDGate(r.opts.AllowOwnUID)
	}
	var svc transport.Service
	slots := make(chan struct{}, maxACPConns)
	err = svc.Start(ctx, r.opts.Names.ACP(), func(*transport.Conn) transport.Admission {
		select {
		case slots <- struct{}{}:
		default:
			return transport.Refuse(busyLine())
		}
		return transport.Admission{
			Serve: func(ctx context.Context, c *transport.Conn) { r.serveConn(ctx, gate, c) },
			Done:  func() { <-slots },
		}
	})
	if err != nil {
		stopAttached()
		r.Close(ctx)
		return fmt.Errorf("daemon: listen: %w", err)
	}
	r.log.Info("listening", "socket", r.opts.Names.ACP())
	if ready != nil {
		ready(r.opts.Names.ACP())
	}
	<-ctx.Done()
	r.log.Info("stopping")
	svc.Close()
	stopAttached()
	return r.Close(ctx)
}

func (r *Runtime) serveConn(ctx context.Context, gate Gate, conn *transport.Conn) {
	caller, stream, err := gate(ctx, conn)
	if err != nil {
		r.log.Info("connection refused", "uid", conn.Cred().UID)
		conn.Close()
		return
	}
	r.log.Info("connection opened", "uid", caller.UID)
	r.Agent.Serve(ctx, caller, stream)
	if err := stream.Err(); err != nil {
		r.log.Info("connection closed", "uid", caller.UID, "err", err)
		return
	}
	r.log.Info("connection closed", "uid", caller.UID)
}
