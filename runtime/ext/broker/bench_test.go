package broker_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/ext/exttest"
	"github.com/stretchr/testify/require"
)

// BenchmarkToolCallOverhead is the runtime's cost of one plugin tool call
// that needs no consent ("always allow"): the catalog lookup under the
// session's scope and mode, the risk policy, the consent.resolved and
// tool.dispatched events, serve → ext over the private link, ext → the
// provider process over its unix socket (MCP), and back. The provider's
// own work is an echo. Targets (issue 13): p50 under 350 µs, p99 under
// 1 ms.
func BenchmarkToolCallOverhead(b *testing.B) {
	h := exttest.New(b, exttest.Options{})
	key, _ := apps.GenerateKey()
	h.Install(b, demoBundle(b, key))
	h.MustCall(b, "plugins.enable", map[string]string{"id": demoID}, nil)
	var v broker.CatalogView
	h.MustCall(b, "catalog", map[string]any{"wait": echo, "timeoutMs": 30000}, &v)
	h.MustCall(b, "plugins.approval", map[string]string{"plugin": "demo", "server": "demo", "tool": "echo", "mode": "always"}, nil)
	br := h.Broker
	require.Eventually(b, func() bool { e, ok := br.Catalog().ByName(echo); return ok && e.Approval == catalog.ApprovalAlways },
		20*time.Second, 10*time.Millisecond, "approval not pushed")
	ctx := context.Background()
	req := engine.ToolCallRequest{Session: session("ses_bench"), ToolCallID: "call_1", Name: echo, Arguments: json.RawMessage(`{"text":"x"}`)}
	ev := &nopEvents{}
	if r, err := br.Call(ctx, req, ev); err != nil || r.Text != "x" {
		b.Fatalf("warm-up call: %+v %v", r, err)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := br.Call(ctx, req, ev)
		lat = append(lat, time.Since(t0))
		if err != nil || r.IsError {
			b.Fatalf("call: %+v %v", r, err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

type nopEvents struct{}

func (nopEvents) Emit(context.Context, string, any) error { return nil }
