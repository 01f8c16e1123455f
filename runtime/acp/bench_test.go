package acp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// rawConn is a benchmark client that reads replies itself, so arrival
// times are taken where the bytes arrive.
type rawConn struct {
	c  net.Conn
	r  *bufio.Reader
	id int
}

func (h *harness) rawConnect() *rawConn {
	srv, cli := net.Pipe()
	stream := transport.NewRPCStream(srv, nil)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.a.Serve(h.ctx, desktop, stream)
	}()
	h.t.Cleanup(func() { cli.Close() })
	return &rawConn{c: cli, r: bufio.NewReaderSize(cli, 1<<16)}
}

func (rc *rawConn) send(method string, params any) int {
	rc.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rc.id, "method": method, "params": params})
	rc.c.Write(append(b, '\n'))
	return rc.id
}

// until reads lines until the response to id; it returns the time the
// first agent_message_chunk arrived (zero if none) and the result.
func (rc *rawConn) until(id int) (time.Time, json.RawMessage, error) {
	var first time.Time
	want := fmt.Sprintf(`"id":%d,`, id)
	for {
		line, err := rc.r.ReadBytes('\n')
		if err != nil {
			return first, nil, err
		}
		if first.IsZero() && strings.Contains(string(line), `"sessionUpdate":"agent_message_chunk"`) {
			first = time.Now()
		}
		if strings.Contains(string(line), want) && !strings.Contains(string(line), `"method"`) {
			return first, line, nil
		}
	}
}

func (rc *rawConn) newSession(b *testing.B) string {
	id := rc.send("session/new", map[string]any{"cwd": "/bench", "mcpServers": []any{}})
	_, line, err := rc.until(id)
	if err != nil {
		b.Fatal(err)
	}
	var res struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	json.Unmarshal(line, &res)
	return res.Result.SessionID
}

// BenchmarkPromptFirstChunk measures the runtime's overhead from a
// session/prompt arriving to its first agent_message_chunk being written,
// with a model that streams at once (target p50 < 0.6 ms). Each session
// takes 50 prompts, so the rebuilt conversation grows as in real use.
func BenchmarkPromptFirstChunk(b *testing.B) {
	h := newHarness(b, harnessOpts{})
	h.model.Default = enginetest.Text("Hello", " world")
	h.model.Forget = true
	rc := h.rawConnect()
	var lat []time.Duration
	var session string
	b.ResetTimer()
	for i := range b.N {
		if i%50 == 0 {
			b.StopTimer()
			session = rc.newSession(b)
			b.StartTimer()
		}
		start := time.Now()
		id := rc.send("session/prompt", textPrompt(session, "hi"))
		first, _, err := rc.until(id)
		if err != nil || first.IsZero() {
			b.Fatalf("prompt %d: %v", i, err)
		}
		lat = append(lat, first.Sub(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkSequentialPromptsHeap runs 1,000 prompts one after another on
// one connection (20 sessions of 50) after a warm-up of the same size, and
// reports the live heap and the goroutine count before and after: memory
// must stay flat.
func BenchmarkSequentialPromptsHeap(b *testing.B) {
	h := newHarness(b, harnessOpts{})
	h.model.Default = enginetest.Text("Some answer text ", "in two chunks.")
	h.model.Forget = true
	rc := h.rawConnect()
	heap := func() (uint64, int) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, runtime.NumGoroutine()
	}
	run := func(n int) {
		var session string
		for i := range n {
			if i%50 == 0 {
				session = rc.newSession(b)
			}
			id := rc.send("session/prompt", textPrompt(session, "question "+fmt.Sprint(i)))
			if _, _, err := rc.until(id); err != nil {
				b.Fatal(err)
			}
		}
	}
	run(1000) // fill the bounded caches (idle sessions, statement caches, pools)
	before, gBefore := heap()
	b.ResetTimer()
	for range b.N {
		run(1000)
	}
	b.StopTimer()
	after, gAfter := heap()
	b.ReportMetric(float64(before)/1024, "heap-before-KB")
	b.ReportMetric(float64(after)/1024, "heap-after-KB")
	b.ReportMetric(float64(gAfter-gBefore), "goroutines-added")
}
