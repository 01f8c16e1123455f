package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/agentoslab/agentlab/runtime/acp"
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

// gate admits a connection on the ACP socket before any byte of ACP: it
// returns the caller and the stream ACP runs on, or an error, after which
// the connection is closed.
type gate func(conn *transport.Conn) (engine.Caller, *transport.RPCStream, error)

// errNotAdmitted is a peer the gate refuses; it is closed unread.
var errNotAdmitted = errors.New("daemon: peer not admitted")

// uidGate admits peers whose uid is root or shell, and also the runtime's
// own uid when ownUID is set, as caller DESKTOP; the connection then
// carries ACP at once. (Desktop pairing, runtime/bridge, is the gate of
// a device.)
func uidGate(ownUID bool) gate {
	self := os.Getuid()
	return func(conn *transport.Conn) (engine.Caller, *transport.RPCStream, error) {
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

// acpAdmit is the ACP socket's admission: up to maxACPConns connections,
// each passed through g and then served by the one shared agent.
func acpAdmit(agent *acp.Agent, g gate, log *slog.Logger) transport.Admit {
	slots := make(chan struct{}, maxACPConns)
	return func(*transport.Conn) transport.Admission {
		select {
		case slots <- struct{}{}:
		default:
			return transport.Refuse(busyLine())
		}
		return transport.Admission{
			Serve: func(ctx context.Context, c *transport.Conn) { serveACP(ctx, agent, g, c, log) },
			Done:  func() { <-slots },
		}
	}
}

func serveACP(ctx context.Context, agent *acp.Agent, g gate, conn *transport.Conn, log *slog.Logger) {
	caller, stream, err := g(conn)
	if err != nil {
		log.Info("connection refused", "uid", conn.Cred().UID)
		return
	}
	log.Info("connection opened", "uid", caller.UID)
	agent.Serve(ctx, caller, stream)
	if err := stream.Err(); err != nil {
		log.Info("connection closed", "uid", caller.UID, "err", err)
		return
	}
	log.Info("connection closed", "uid", caller.UID)
}
