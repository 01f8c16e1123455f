package bridge

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	stdioServer = `{"name":"fs","command":"/usr/bin/mcp-fs","args":["--root","/home"],"env":[]}`
	httpServer  = `{"type":"http","name":"docs","url":"https://docs.example.com/mcp","headers":[]}`
	sseServer   = `{"type":"sse","name":"old","url":"https://old.example.com/sse","headers":[]}`
)

// TestDropStdio: which servers of a session request reach the phone,
// and which the notice names.
func TestDropStdio(t *testing.T) {
	cases := []struct {
		name     string
		line     string
		changed  bool
		servers  string // what the phone gets when changed
		dropped  []string
		noticeID string
	}{
		{name: "no servers", line: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`},
		{name: "http only", line: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[` + httpServer + `]}}`},
		{name: "sse is the phone's to refuse", line: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[` + sseServer + `]}}`},
		{name: "stdio in new", line: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[` + stdioServer + `]}}`,
			changed: true, servers: `[]`, dropped: []string{"fs"}, noticeID: "1"},
		{name: "stdio and http", line: `{"jsonrpc":"2.0","id":"a","method":"session/new","params":{"cwd":"/","mcpServers":[` + httpServer + `,` + stdioServer + `]}}`,
			changed: true, servers: `[` + httpServer + `]`, dropped: []string{"fs"}, noticeID: `"a"`},
		{name: "explicit stdio type", line: `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"ses_1","cwd":"/","mcpServers":[{"type":"stdio","name":"x","command":"x"}]}}`,
			changed: true, servers: `[]`, dropped: []string{"x"}, noticeID: "2"},
		{name: "resume", line: `{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"ses_1","cwd":"/","mcpServers":[` + stdioServer + `]}}`,
			changed: true, servers: `[]`, dropped: []string{"fs"}, noticeID: "3"},
		{name: "fork", line: `{"jsonrpc":"2.0","id":4,"method":"session/fork","params":{"sessionId":"ses_1","cwd":"/","mcpServers":[` + stdioServer + `]}}`,
			changed: true, servers: `[]`, dropped: []string{"fs"}, noticeID: "4"},
		{name: "other method", line: `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s","mcpServers":[` + stdioServer + `]}}`},
		{name: "a notification", line: `{"jsonrpc":"2.0","method":"session/new","params":{"mcpServers":[` + stdioServer + `]}}`},
		{name: "servers not a list", line: `{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"mcpServers":{"x":1}}}`},
		{name: "not json", line: `{"mcpServers": [`},
		{name: "names cleaned", line: `{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"mcpServers":[{"name":"a\u0007b\nc","command":"x"},{"command":"y"}]}}`,
			changed: true, servers: `[]`, dropped: []string{"abc", "(unnamed)"}, noticeID: "7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProxy()
			in := []byte(tc.line + "\n")
			out, after := p.fromEditor(in)
			assert.Nil(t, after)
			if !tc.changed {
				assert.Equal(t, string(in), string(out), "forwarded unchanged, byte for byte")
				assert.False(t, p.waiting())
				return
			}
			require.True(t, bytes.HasSuffix(out, []byte("\n")))
			var sent, orig map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(out, &sent))
			require.NoError(t, json.Unmarshal(in, &orig))
			assert.Equal(t, string(orig["id"]), string(sent["id"]))
			assert.Equal(t, string(orig["method"]), string(sent["method"]))
			var params map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(sent["params"], &params))
			assert.JSONEq(t, tc.servers, string(params["mcpServers"]))
			n, ok := p.take(tc.noticeID)
			require.True(t, ok, "a notice waits for the answer")
			assert.Equal(t, tc.dropped, n.servers)
		})
	}
}

// TestNoticeAfterAnswer: the notice follows the answer of the request it
// belongs to, for the answer's session (new) or the request's (load);
// a failed answer or another id gets none.
func TestNoticeAfterAnswer(t *testing.T) {
	p := newProxy()
	p.fromEditor([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[` + stdioServer + `]}}` + "\n"))
	p.fromEditor([]byte(`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"ses_L","cwd":"/","mcpServers":[` + stdioServer + `]}}` + "\n"))
	p.fromEditor([]byte(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/","mcpServers":[` + stdioServer + `]}}` + "\n"))

	update := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"ses_L","update":{"sessionUpdate":"user_message_chunk"}}}` + "\n")
	out, after := p.fromPhone(update)
	assert.Equal(t, update, out)
	assert.Nil(t, after, "history replayed before the answer gets no notice")

	other := []byte(`{"jsonrpc":"2.0","id":9,"result":{}}` + "\n")
	_, after = p.fromPhone(other)
	assert.Nil(t, after)

	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"ses_N"}}` + "\n")
	out, after = p.fromPhone(answer)
	assert.Equal(t, answer, out, "the answer itself is unchanged")
	assertNotice(t, after, "ses_N", []string{"fs"})
	_, after = p.fromPhone(answer)
	assert.Nil(t, after, "one notice per request")

	_, after = p.fromPhone([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"))
	assertNotice(t, after, "ses_L", []string{"fs"})

	_, after = p.fromPhone([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}` + "\n"))
	assert.Nil(t, after, "a failed session gets no notice")
	assert.False(t, p.waiting())
}

func assertNotice(t *testing.T, line []byte, session string, servers []string) {
	t.Helper()
	require.True(t, bytes.HasSuffix(line, []byte("\n")), "one line")
	require.Equal(t, 1, bytes.Count(line, []byte("\n")))
	var n struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		ID      *int   `json:"id"`
		Params  struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
				Meta struct {
					AgentOS struct {
						Bridge struct {
							Dropped []string `json:"droppedMcpServers"`
						} `json:"bridge"`
					} `json:"org.agentos"`
				} `json:"_meta"`
			} `json:"update"`
		} `json:"params"`
	}
	require.NoError(t, json.Unmarshal(line, &n))
	assert.Equal(t, "2.0", n.JSONRPC)
	assert.Equal(t, "session/update", n.Method)
	assert.Nil(t, n.ID, "a notification")
	assert.Equal(t, session, n.Params.SessionID)
	assert.Equal(t, "agent_message_chunk", n.Params.Update.SessionUpdate)
	assert.Equal(t, "text", n.Params.Update.Content.Type)
	assert.Equal(t, NoticeText(servers), n.Params.Update.Content.Text)
	assert.Equal(t, servers, n.Params.Update.Meta.AgentOS.Bridge.Dropped)
}

func TestNoticeText(t *testing.T) {
	assert.Equal(t, "[agentlab bridge] The MCP server \"fs\" runs over stdio on this computer; the phone cannot reach it, so it was left out of this session.\n\n",
		NoticeText([]string{"fs"}))
	assert.Equal(t, "[agentlab bridge] The MCP servers \"a\", \"b\" run over stdio on this computer; the phone cannot reach them, so they were left out of this session.\n\n",
		NoticeText([]string{"a", "b"}))
}

// TestPendingBounded: requests whose answer never comes do not grow the
// proxy without bound.
func TestPendingBounded(t *testing.T) {
	p := newProxy()
	for i := 0; i < maxPending+10; i++ {
		p.remember(strings.Repeat("x", i+1), notice{servers: []string{"s"}})
	}
	assert.Len(t, p.pending, maxPending)
	assert.Len(t, p.order, maxPending)
	_, ok := p.take("x")
	assert.False(t, ok, "the oldest went first")
}

// TestCopyLines: lines pass in order whatever the chunking; a line longer
// than the bound is passed through byte for byte without being parsed; a
// last line without a newline is passed too; "after" follows its line.
func TestCopyLines(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"mcpServers":[` + stdioServer + `],"x":"` + strings.Repeat("é", maxLineBytes/2) + `"}}` + "\n"
	in := "a\r\n" + long + "b\n\n" + "c"
	for _, chunked := range []bool{false, true} {
		var seen []string
		var out bytes.Buffer
		var src = strings.NewReader(in)
		var r = iotestReader(src, chunked)
		err := copyLines(&out, r, func(line []byte) ([]byte, []byte) {
			seen = append(seen, string(line))
			return line, []byte("+")
		})
		require.NoError(t, err)
		assert.Equal(t, []string{"a\r\n", "b\n", "\n", "c"}, seen, "the long line was not parsed")
		assert.Equal(t, "a\r\n+"+long+"b\n+\n+c+", out.String())
	}
}

func iotestReader(r *strings.Reader, chunked bool) interface{ Read([]byte) (int, error) } {
	if chunked {
		return iotest.OneByteReader(r)
	}
	return r
}
