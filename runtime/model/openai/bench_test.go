package openai

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/modeltest"
)

// BenchmarkStreamChunks measures what the provider costs per streamed
// chunk: a local server writes a whole answer of 16-character chunks at
// once, so the time is the SDK's SSE decoding plus our event mapping,
// not the network. Reported per chunk: wall and CPU nanoseconds.
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
	start, cpu0 := time.Now(), cpuTime()
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
	per := float64(b.N * chunks)
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/per, "ns/chunk")
	// CPU time (the whole process: client, the local server's one write,
	// GC) is what a chunk costs; wall time also counts waiting for a CPU
	// on a busy machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/per, "cpu-ns/chunk")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
