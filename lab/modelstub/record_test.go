package modelstub

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/lab/modelstub/fakelive"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

var recTools = []model.Tool{
	{Name: "mcp__mcptest__test__echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	{Name: "mcp__notes__notes__note_add", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"title":{"type":"string"},"pinned":{"type":"boolean"},"rank":{"type":"integer"}}}`)},
}

// turn plays one agent turn against p: the model's tool calls get a
// result that depends on their arguments, until the model ends the turn.
// It returns every event of every call.
func turn(t *testing.T, p model.Provider) []model.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := &model.Request{Model: "live-model", System: "be brief", Tools: recTools,
		Messages: []model.Message{{Role: model.RoleUser, Text: "Do something."}}}
	var all []model.Event
	for range 8 {
		evs, err := call(ctx, p, req)
		require.NoError(t, err)
		all = append(all, evs...)
		msg := model.Message{Role: model.RoleAssistant}
		for _, ev := range evs {
			switch ev.Kind {
			case model.TextDelta:
				msg.Text += ev.Text
			case model.ToolCallDone:
				msg.ToolCalls = append(msg.ToolCalls, ev.Call)
			}
		}
		req.Messages = append(req.Messages, msg)
		if len(msg.ToolCalls) == 0 {
			return all
		}
		for _, c := range msg.ToolCalls {
			req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Text: "ran " + string(c.Arguments)})
		}
	}
	t.Fatal("the turn did not end")
	return nil
}

func startRecorder(t *testing.T, api string, live *fakelive.Server) *Stub {
	t.Helper()
	base := live.OpenAIBaseURL()
	if api == APIAnthropic {
		base = live.AnthropicBaseURL()
	}
	s, err := Start(&Options{Upstream: &Upstream{API: api, BaseURL: base, Key: fakelive.Key}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRecordReplays records turns against a provider that answers at
// random, then replays each recording from the plain stub: the runtime's
// provider must see exactly the recorded events, for both dialects, 20
// times each. A recorder that lost a chunk boundary, a thinking delta, a
// tool call id, an argument (or a "$" in one) or a stop reason fails it.
func TestRecordReplays(t *testing.T) {
	replay := startStub(t, nil)
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			live := fakelive.Start(nil)
			defer live.Close()
			rec := startRecorder(t, c.name, live)
			tools, thinking := 0, 0
			for i := range 20 {
				tok := NewToken()
				require.NoError(t, rec.Bind(tok, nil))
				recorded := turn(t, c.new(rec, tok, noRetry))
				doc, ok, err := rec.Recording(context.Background(), tok)
				require.NoError(t, err)
				require.True(t, ok, "%s %v", doc, recorded)
				sc, err := script.Parse(doc)
				require.NoError(t, err, "recording %d:\n%s", i, doc)
				require.NoError(t, replay.Bind(tok, sc))
				replayed := turn(t, c.new(replay, tok, noRetry))
				require.Equal(t, recorded, replayed, "recording %d:\n%s", i, doc)
				for _, ev := range recorded {
					tools += btoi(ev.Kind == model.ToolCallDone)
					thinking += btoi(ev.Kind == model.ThinkingDelta)
				}
			}
			// The fake provider's randomness must have reached both paths.
			assert.Positive(t, tools)
			assert.Positive(t, thinking)
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRecordKeepsKeyOut: the provider's key goes out to the provider
// only — never back to the runtime (even when the provider echoes it in
// a header), nor into the recorded requests or the recording.
func TestRecordKeepsKeyOut(t *testing.T) {
	live := fakelive.Start(&fakelive.Options{EchoKey: true})
	defer live.Close()
	rec := startRecorder(t, APIOpenAI, live)
	tok := NewToken()
	require.NoError(t, rec.Bind(tok, nil))
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest(http.MethodPost, rec.BaseURL(tok)+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+FakeKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	for k, vs := range resp.Header {
		for _, v := range vs {
			assert.NotContains(t, v, fakelive.Key, "header %s", k)
		}
	}
	assert.NotContains(t, string(got), fakelive.Key)
	doc, ok, err := rec.Recording(context.Background(), tok)
	require.NoError(t, err)
	require.True(t, ok)
	assert.NotContains(t, string(doc), fakelive.Key)
	reqs, _ := rec.Requests(tok)
	b, _ := json.Marshal(reqs)
	assert.NotContains(t, string(b), fakelive.Key)
	require.Len(t, reqs, 1)
	assert.Equal(t, http.StatusOK, reqs[0].Status)

	// The runtime's fake key is not passed on: the provider refuses it
	// if it were the only key.
	assert.Equal(t, 1, live.Calls())
}

// TestRecordRefusesOtherDialect: the runtime must speak the provider's
// API, since requests pass through unchanged.
func TestRecordRefusesOtherDialect(t *testing.T) {
	live := fakelive.Start(nil)
	defer live.Close()
	rec := startRecorder(t, APIAnthropic, live)
	tok := NewToken()
	require.NoError(t, rec.Bind(tok, nil))
	_, err := call(context.Background(), clients[0].new(rec, tok, noRetry), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "x"}}})
	require.Error(t, err)
	assert.Zero(t, live.Calls())
}

// TestRecordFailures: a provider's error status is recorded as a fail
// step with its retry-after; a retried call that then succeeds keeps the
// success; a stream that ends without a stop reason is cut there.
func TestRecordFailures(t *testing.T) {
	n := 0
	live := fakelive.Start(nil)
	defer live.Close()
	flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"slow down"}}`)
			return
		}
		live.Config.Handler.ServeHTTP(w, r)
	})
	front := startHandler(t, flaky)
	s, err := Start(&Options{Upstream: &Upstream{API: APIOpenAI, BaseURL: front + "/v1", Key: fakelive.Key}})
	require.NoError(t, err)
	defer s.Close()
	tok := NewToken()
	require.NoError(t, s.Bind(tok, nil))
	p := clients[0].new(s, tok, noRetry)
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "x"}}}
	_, err = call(context.Background(), p, req)
	require.Error(t, err)
	doc, _, err := s.Recording(context.Background(), tok)
	require.NoError(t, err)
	assert.Contains(t, string(doc), "status: 429")
	assert.Contains(t, string(doc), `retryAfter: "7"`)
	_, err = call(context.Background(), p, req)
	require.NoError(t, err)
	doc, _, err = s.Recording(context.Background(), tok)
	require.NoError(t, err)
	assert.NotContains(t, string(doc), "status: 429")
	_, err = script.Parse(doc)
	require.NoError(t, err)

	st := parseAnswer(APIOpenAI, "text/event-stream", []byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"+
		"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"))
	require.NotNil(t, st.CutAfter)
	assert.Equal(t, 2, *st.CutAfter)
	assert.Equal(t, []string{"a", "b"}, st.Text)
}

// TestArgumentsNode keeps the model's key order, doubles dollars and
// keeps string-looking scalars strings.
func TestArgumentsNode(t *testing.T) {
	n := argumentsNode(`{"z":"$5","a":[1,2.5,true,null,"12"],"m":{"k":"v"}}`)
	doc, err := yamlMarshal(n)
	require.NoError(t, err)
	sc, err := script.Parse([]byte("steps:\n  - toolCalls:\n      - name: t\n        arguments: " + strings.TrimSpace(doc) + "\n"))
	require.NoError(t, err, doc)
	resp, err := sc.Respond(&model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "x"}}})
	require.NoError(t, err)
	require.Len(t, resp.Events, 1)
	assert.JSONEq(t, `{"z":"$5","a":[1,2.5,true,null,"12"],"m":{"k":"v"}}`, string(resp.Events[0].Call.Arguments))
	assert.Less(t, strings.Index(doc, "z"), strings.Index(doc, "a"))
	for _, bad := range []string{`[1]`, `{"a":1} {}`, `{`, ``} {
		assert.Empty(t, argumentsNode(bad).Content, bad)
	}
}

func startHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func yamlMarshal(n *yaml.Node) (string, error) {
	n.Style = yaml.FlowStyle
	b, err := yaml.Marshal(n)
	return string(b), err
}
