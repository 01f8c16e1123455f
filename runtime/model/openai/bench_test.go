package openai

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/modeltest"
)

// BenchmarkStreamChunks measures what the provider costs per streamed
// chunk: a local server writes a whole answer of 16-character chunks at
// once, so the time is the SDK's SSE decoding plus our event mapping,
// not the network. Reported: ns per chunk and allocations per chunk.
func BenchmarkStreamChunks(b *testing.B) {
	const chunks = 1000
	var body strings.Builder
	body.WriteString(chunk(`{"role":"assistant","content":""}`, ""))
	for range chunks {
		body.WriteString(chunk(`{"content":"0123456789abcdef"}`, ""))
	}
	body.WriteString(chunk(`{}`, "stop"))
	body.WriteString("data: [DONE]\n\n")
	payload := body.String()
	srv := modeltest.HTTP(b, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(payload))
	})
	p := open(b, srv.URL, nil)
	req := modeltest.Request()
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		s, err := p.Stream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			ev, err := s.Next()
			if err != nil {
				b.Fatal(err)
			}
			if ev.Kind == model.Done {
				break
			}
			n++
		}
		s.Close()
		if n != chunks {
			b.Fatalf("%d text events, want %d", n, chunks)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*chunks), "ns/chunk")
}
