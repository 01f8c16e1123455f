package modelstub

import (
	"context"
	"testing"

	"github.com/agentoslab/agentlab/runtime/model"
)

// BenchmarkStubTurn is one scripted model call through the stub with the
// runtime's OpenAI-compatible provider as the client: request, parse,
// script, SSE answer, parse, all events.
func BenchmarkStubTurn(b *testing.B) {
	s, err := Start(&Options{MaxRecorded: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tok := NewToken()
	sc, err := parseScript("steps:\n  - text: [Hello, ' there', ', how', ' can', ' I', ' help?']\n    toolCalls:\n      - name: t\n        arguments: {x: 1}\n")
	if err != nil {
		b.Fatal(err)
	}
	s.Bind(tok, sc)
	p := clients[0].new(s, tok, noRetry)
	req := userReq("hi", "t")
	ctx := context.Background()
	for b.Loop() {
		evs, err := call(ctx, p, req)
		if err != nil || len(evs) != 8 || evs[7].Kind != model.Done {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}
