package errcode

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/golden"
)

// TestErrorLineGolden pins every envelope the runtime writes outside a
// JSON-RPC engine, byte for byte (testdata/envelopes.golden). The spec
// quotes the busy line of the desktop gateway (§8.1) literally; a
// hand-written copy that hard-coded retryable drifted from the table
// once, which is why every such line now comes from ErrorLine.
func TestErrorLineGolden(t *testing.T) {
	pending := New(NotOpen, "waiting for the user").Wire()
	pending.Message = "agentos.acp.authorization_pending: waiting for the user to allow this app to use AgentOS; retry in a second"
	pending.Data.Reason, pending.Data.RequestID = "authorization_pending", "6f1c"
	cases := []struct {
		name string
		id   json.RawMessage
		w    WireError
	}{
		{"desktop busy (spec §8.1)", nil, New(Busy, "too many desktop connections").Wire()},
		{"pairing refused", json.RawMessage(`0`), New(AuthRequired, "wrong pairing code, or no pairing code is active; generate one on the phone").
			WithDetails(map[string]any{"reason": "invalid_code"}).Wire()},
		{"channel refusal", nil, pending},
		{"parse error", nil, Protocol(RPCParseError, "Parse error")},
		{"invalid request with a string id", json.RawMessage(`"a"`), Protocol(RPCInvalidRequest, "Invalid request")},
		{"id that is not JSON answers null", json.RawMessage(`{`), Protocol(RPCInvalidRequest, "Invalid request")},
	}
	var out bytes.Buffer
	for _, c := range cases {
		out.WriteString("# " + c.name + "\n")
		line := ErrorLine(c.id, c.w)
		require.True(t, bytes.HasSuffix(line, []byte("\n")), c.name)
		require.Equal(t, 1, bytes.Count(line, []byte("\n")), "%s: one line", c.name)
		require.True(t, json.Valid(line), c.name)
		out.Write(line)
	}
	golden.Check(t, "testdata/envelopes.golden", out.Bytes())
	assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32047,"message":"busy: too many desktop connections","data":{"agentosCode":"busy","retryable":true}}}`+"\n",
		string(ErrorLine(nil, New(Busy, "too many desktop connections").Wire())), "the spec's literal line (§8.1)")
}

// TestRetryableFollowsTheTable: the envelope's retryable is the table's,
// for every code (the desktop busy line once hard-coded it).
func TestRetryableFollowsTheTable(t *testing.T) {
	for _, r := range Table() {
		var got struct {
			Error struct {
				Code int `json:"code"`
				Data struct {
					AgentosCode string `json:"agentosCode"`
					Retryable   bool   `json:"retryable"`
				} `json:"data"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(ErrorLine(nil, New(r.Code, "x").Wire()), &got))
		assert.Equal(t, r.RPC, got.Error.Code, r.Code)
		assert.Equal(t, string(r.Code), got.Error.Data.AgentosCode)
		assert.Equal(t, r.Retryable, got.Error.Data.Retryable, r.Code)
	}
}

func TestWriteErrorIsOneWrite(t *testing.T) {
	var w countingWriter
	require.NoError(t, WriteError(&w, json.RawMessage("7"), New(Busy, "later").Wire()))
	assert.Equal(t, 1, w.writes)
	assert.Contains(t, w.buf.String(), `"id":7`)
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.buf.Write(p) }
