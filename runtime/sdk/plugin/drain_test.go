package plugin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inputThenEOF is a connection whose input is fixed (it ends right after
// the last line, as `printf … | app mcp --stdio` does) and whose output
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

func (c *inputThenEOF) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Split(strings.TrimSpace(c.out.String()), "\n")
}

// A client that writes its requests and ends its input gets every answer
// on stdio (the app's `mcp --stdio`): the end of the input waits for
// them. Without DrainOnEOF the session ends at EOF and the answers are
// lost — the bug this pins.
func TestStdioAnswersEverythingReadBeforeEOF(t *testing.T) {
	t.Parallel()
	s := NewServer(Info{Name: "memo"}, nil)
	s.MustAddTool(Tool{Name: "slow", InputSchema: objSchema,
		Handler: func(ctx context.Context, _ json.RawMessage) (*Result, error) {
			select {
			case <-time.After(50 * time.Millisecond):
				return Text("late but here"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
	}, "\n") + "\n"
	for _, only := range []string{"initialize only", "all"} {
		t.Run(only, func(t *testing.T) {
			input, want := in, []float64{1, 2, 3}
			if only == "initialize only" {
				input, want = strings.SplitAfter(in, "\n")[0], []float64{1}
			}
			c := &inputThenEOF{Reader: strings.NewReader(input)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s.serveTransport(ctx, &Transport{Conn: c, Serving: true, DrainOnEOF: true})
			require.NoError(t, ctx.Err(), "served to the end of the input, not to the timeout")
			var ids []float64
			for _, l := range c.lines() {
				var m struct {
					ID     float64         `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				require.NoError(t, json.Unmarshal([]byte(l), &m), l)
				require.NotNil(t, m.Result, "an answer, not an error: %s", l)
				ids = append(ids, m.ID)
				if m.ID == 3 {
					assert.Contains(t, string(m.Result), "late but here")
				}
			}
			assert.ElementsMatch(t, want, ids)
		})
	}
}

// Without DrainOnEOF (a socket session) the end of the input ends the
// session at once; the drain is stdio's only.
func TestSocketSessionEndsAtEOF(t *testing.T) {
	t.Parallel()
	s := NewServer(Info{Name: "memo"}, nil)
	c := &inputThenEOF{Reader: bufio.NewReader(strings.NewReader(""))}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.serveTransport(ctx, &Transport{Conn: c, Serving: true})
	require.NoError(t, ctx.Err())
}
