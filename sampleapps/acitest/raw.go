package acitest

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
)

// RawName is the app's second ACI server: a callee written without the
// SDK, the way upstream's apps declared capabilities, so it can declare
// what the SDK refuses.
const RawName = "raw"

// RawCapabilities are what the raw server declares: one whose
// description is a version string (upstream's Capability.create(id,
// "1.0") bug; the SDK refuses to build it) and a sound one beside it.
var RawCapabilities = []string{
	`{"id":"pitfall","description":"1.0"}`,
	`{"id":"echo","description":"Say that the raw callee answered."}`,
}

// ServeRaw serves the raw server on the abstract socket name until ctx
// ends: getCapabilities, ping, and call of echo.
func ServeRaw(ctx context.Context, name string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", name)
	if err != nil {
		return fmt.Errorf("raw: %w", err)
	}
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		conn, err := ln.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("raw: %w", err)
		}
		wg.Go(func() { serveRawConn(ctx, conn) })
	}
}

func serveRawConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	for {
		payload, err := wire.ReadFrame(conn, wire.MagicRequest)
		if err != nil {
			return
		}
		req, err := wire.DecodeRequest(payload)
		var resp *wire.Response
		switch {
		case err != nil:
			resp = wire.Failure(wire.BadRequest, "malformed request")
		case req.Method == wire.MethodGetCapabilities:
			resp = &wire.Response{Success: true, Capabilities: RawCapabilities}
		case req.Method == wire.MethodPing:
			resp = &wire.Response{Success: true, Pong: true}
		case req.Capability == "echo":
			resp = &wire.Response{Success: true, Result: wire.Bundle{"said": wire.String("raw callee answered")}}
		default:
			resp = wire.Failure(wire.CapabilityNotFound, "no capability "+req.Capability)
		}
		if req != nil {
			resp.CallID = req.CallID
		}
		out, err := wire.EncodeResponse(resp)
		if err == nil {
			err = wire.WriteFrame(conn, wire.MagicResponse, out)
		}
		if err != nil {
			return
		}
	}
}
