package aci

import (
	"context"
	"os"
	"testing"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
)

// BenchmarkCallRoundTrip is one synchronous call over a real unix
// socket: dial, SO_PEERCRED check, request frame, admission, validation,
// handler, result check, response frame — the wire side of the
// runtime's call overhead (target p50 < 500 µs for the whole path).
func BenchmarkCallRoundTrip(b *testing.B) {
	srv := NewServer("bench", nil)
	srv.MustAdd(echoCap())
	name := sockName(&testing.T{})
	ctx, cancel := context.WithCancel(context.Background())
	sv, err := srv.Start(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); sv.Wait() }()
	cl := &wire.Client{Socket: name, UID: os.Getuid(), CallerPkg: "org.agentos.sample.notes"}
	params := wire.Bundle{"text": wire.String("hello")}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := cl.Call(ctx, "echo", params, 0)
		if err != nil || !resp.Success {
			b.Fatal(err, resp)
		}
	}
}
