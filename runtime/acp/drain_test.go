package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// inputThenEOF is a connection whose input is fixed and then ends, as a
// client that writes its requests and closes stdin; what the agent writes
// is kept.
type inputThenEOF struct {
	io.Reader
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *inputThenEOF) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *inputThenEOF) Close() error { return nil }

func (c *inputThenEOF) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// TestDrainAnswersEverythingReadBeforeEOF: with DrainOnEOF, every request
// that arrived before the input ended is answered for real, never
// "busy: the connection is closing" — however late the SDK's goroutine
// for it runs. Many rounds, because the race it pins is narrow.
func TestDrainAnswersEverythingReadBeforeEOF(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{agent: func(o *Options) { o.DrainOnEOF = true }})
	const rounds, perRound = 40, 8
	for round := range rounds {
		var in strings.Builder
		in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
		for i := 1; i <= perRound; i++ {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`+"\n", i)
		}
		// A notification and an unknown method arrive too; neither may
		// hold the end of input back.
		in.WriteString(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"ses_none"}}` + "\n")
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"no/such","params":{}}`+"\n", perRound+1)
		conn := &inputThenEOF{Reader: strings.NewReader(in.String())}
		if err := h.a.Serve(h.ctx, desktop, transport.NewRPCStream(conn, nil)); err != nil {
			t.Fatal(err)
		}
		answered := map[int]bool{}
		for _, line := range strings.Split(strings.TrimSpace(conn.output()), "\n") {
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *wireError      `json:"error"`
			}
			if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil {
				continue
			}
			switch {
			case *m.ID == perRound+1:
				if m.Error == nil || m.Error.Code != -32601 {
					t.Fatalf("round %d: unknown method answered %s", round, line)
				}
			case m.Error != nil:
				t.Fatalf("round %d: request %d refused: %s", round, *m.ID, line)
			}
			answered[*m.ID] = true
		}
		if len(answered) != perRound+2 {
			t.Fatalf("round %d: %d of %d requests answered:\n%s", round, len(answered), perRound+2, conn.output())
		}
	}
}

func TestHandedToHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line            string
		handed, request bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`, true, true},
		{`{"jsonrpc":"2.0","id":"a","method":"x"}`, true, true},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, true, false}, // null decodes as no id, as in the SDK
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, true, false},
		{`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"$/cancel_request"}`, true, true},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"x","error":"not an object"}`, false, false},
		{`not json`, false, false},
		{`   `, false, false},
	}
	for _, tc := range tests {
		handed, request := handedToHandler([]byte(tc.line))
		if handed != tc.handed || request != tc.request {
			t.Errorf("handedToHandler(%s) = %v, %v; want %v, %v", tc.line, handed, request, tc.handed, tc.request)
		}
	}
}

// FuzzDrainReaderCount: however the input is cut into reads, the
// messages counted are those of its whole lines.
func FuzzDrainReaderCount(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n"), uint8(3))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1}\n\n{\"method\":\"$/cancel_request\"}\n{\"method\":\"x\"}"), uint8(1))
	f.Add([]byte("\n\n\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		var handed, requests int64
		lines := bytes.Split(data, []byte("\n"))
		for _, l := range lines[:len(lines)-1] { // the last has no '\n'
			h, r := handedToHandler(l)
			if h {
				handed++
			}
			if r {
				requests++
			}
		}
		d := &drainReader{cn: &conn{drain: newDrainState()}}
		step := int(cut)%17 + 1
		for b := data; len(b) > 0; {
			n := min(step, len(b))
			d.count(b[:n])
			b = b[n:]
		}
		if got, gotReq := d.cn.drain.handed.Load(), d.cn.drain.requests.Load(); got != handed || gotReq != requests {
			t.Fatalf("counted %d (%d requests), want %d (%d)", got, gotReq, handed, requests)
		}
	})
}
