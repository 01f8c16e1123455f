package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/internal/golden"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/modeltest"
)

func open(t testing.TB, baseURL string, logger *slog.Logger) model.Provider {
	t.Helper()
	return openWith(t, baseURL, modeltest.Opts{Logger: logger})
}

func openWith(t testing.TB, baseURL string, o modeltest.Opts) model.Provider {
	t.Helper()
	timeout := o.Timeout
	if timeout == 0 {
		timeout = modeltest.HeaderTimeout
	}
	p, err := New(model.Config{Provider: "anthropic", BaseURL: baseURL, Model: "test-model", Key: modeltest.Key,
		Timeout: timeout}, &Options{Logger: o.Logger, Retry: modeltest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ev(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

const start = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"test-model","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`

func blockStart(i int, block string) string {
	return ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block))
}

func delta(i int, d string) string {
	return ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, d))
}

func blockStop(i int) string {
	return ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

func stop(reason string) string {
	return ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":5}}`, reason)) +
		ev("message_stop", `{"type":"message_stop"}`)
}

func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

var okHandler = sse(ev("message_start", start), blockStart(0, `{"type":"text","text":""}`),
	delta(0, `{"type":"text_delta","text":"ok"}`), blockStop(0), stop("end_turn"))

func TestStreamAssemblesBlocks(t *testing.T) {
	t.Parallel()
	srv := modeltest.HTTP(t, false, sse(
		ev("message_start", start),
		blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
		delta(0, `{"type":"thinking_delta","thinking":"let me think"}`),
		delta(0, `{"type":"signature_delta","signature":"sig"}`),
		blockStop(0),
		ev("ping", `{"type":"ping"}`),
		blockStart(1, `{"type":"text","text":""}`),
		delta(1, `{"type":"text_delta","text":"Hel"}`),
		delta(1, `{"type":"text_delta","text":"lo"}`),
		blockStop(1),
		blockStart(2, `{"type":"tool_use","id":"toolu_a","name":"mcp__notes__notes__note_create","input":{}}`),
		delta(2, `{"type":"input_json_delta","partial_json":""}`),
		delta(2, `{"type":"input_json_delta","partial_json":"{\"te"}`),
		delta(2, `{"type":"input_json_delta","partial_json":"xt\":\"hi\"}"}`),
		blockStop(2),
		blockStart(3, `{"type":"tool_use","id":"toolu_b","name":"read_skill","input":{}}`),
		blockStop(3),
		stop("tool_use"),
	))
	evs, err := modeltest.Collect(context.Background(), open(t, srv.URL, nil), modeltest.Request())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Event{
		{Kind: model.ThinkingDelta, Text: "let me think"},
		{Kind: model.TextDelta, Text: "Hel"},
		{Kind: model.TextDelta, Text: "lo"},
		{Kind: model.ToolCallDone, Call: model.ToolCall{ID: "toolu_a", Name: "mcp__notes__notes__note_create", Arguments: json.RawMessage(`{"text":"hi"}`)}},
		{Kind: model.ToolCallDone, Call: model.ToolCall{ID: "toolu_b", Name: "read_skill", Arguments: json.RawMessage(`{}`)}},
		{Kind: model.Done, StopReason: model.StopToolUse},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ reason, want string }{
		{"end_turn", model.StopEndTurn},
		{"stop_sequence", model.StopEndTurn},
		{"pause_turn", model.StopEndTurn},
		{"tool_use", model.StopToolUse},
		{"max_tokens", model.StopMaxTokens},
		{"model_context_window_exceeded", model.StopMaxTokens},
		{"refusal", model.StopRefusal},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.HTTP(t, false, sse(ev("message_start", start), stop(tc.reason)))
			evs, err := modeltest.Collect(context.Background(), open(t, srv.URL, nil), modeltest.Request())
			if err != nil {
				t.Fatal(err)
			}
			if got := evs[len(evs)-1]; got.Kind != model.Done || got.StopReason != tc.want {
				t.Errorf("last event %+v, want Done %s", got, tc.want)
			}
		})
	}
}

// TestRequest pins what goes over the wire: system as a top-level block,
// roles merged so they alternate, tool results as tool_result blocks
// (with is_error), tools with their schemas, the default max_tokens, the
// path, and the key in x-api-key only.
func TestRequest(t *testing.T) {
	t.Parallel()
	type seen struct {
		body []byte
		path string
		hdr  http.Header
	}
	got := make(chan seen, 1)
	srv := modeltest.HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{b, r.URL.Path, r.Header.Clone()}
		okHandler(w, r)
	})
	p, err := New(model.Config{BaseURL: srv.URL, Model: "default-model", Key: modeltest.Key},
		&Options{Retry: modeltest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{
		System: "You are the AgentOS agent.",
		Messages: []model.Message{
			{Role: model.RoleUser, Text: "make two notes"},
			{Role: model.RoleAssistant, Text: "Sure.", ToolCalls: []model.ToolCall{
				{ID: "toolu_1", Name: "mcp__notes__notes__note_create", Arguments: json.RawMessage(`{"text":"a"}`)},
				{ID: "toolu_2", Name: "mcp__notes__notes__note_create", Arguments: json.RawMessage(`{"text":"b"}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "toolu_1", Text: `{"id":7}`},
			{Role: model.RoleTool, ToolCallID: "toolu_2", Text: "[agentos:tool_denied] The user declined this tool call.", IsError: true},
			{Role: model.RoleAssistant, Text: "One was declined."},
			{Role: model.RoleUser, Text: "ok"},
		},
		Tools: []model.Tool{
			{Name: "mcp__notes__notes__note_create", Description: "Create a note.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)},
			{Name: "read_skill"},
		},
	}
	if _, err := modeltest.Collect(context.Background(), p, req); err != nil {
		t.Fatal(err)
	}
	s := <-got
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, s.body, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "request.golden.json"), pretty.Bytes())
	if s.path != "/v1/messages" {
		t.Errorf("path = %q", s.path)
	}
	if got := s.hdr.Get("X-Api-Key"); got != modeltest.Key {
		t.Errorf("x-api-key = %q", got)
	}
	for k, vs := range s.hdr {
		for _, v := range vs {
			if k != "X-Api-Key" && strings.Contains(v, modeltest.Key) {
				t.Errorf("header %s carries the key", k)
			}
		}
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	first := ev("message_start", start)
	cases := modeltest.Failures(first, "event: message_start\ndata: {this is not json\n\n")
	cases = append(cases,
		modeltest.Case{Name: "error event", Handler: sse(first,
			ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)),
			Want: errcode.ModelStreamInterrupted, Requests: 1, AfterHeaders: true},
		modeltest.Case{Name: "end without message_stop", Handler: sse(first, blockStart(0, `{"type":"text","text":"x"}`)),
			Want: errcode.ModelStreamInterrupted, Requests: 1, AfterHeaders: true},
		modeltest.Case{Name: "tool input not JSON", Handler: sse(first,
			blockStart(0, `{"type":"tool_use","id":"t","name":"n","input":{}}`),
			delta(0, `{"type":"input_json_delta","partial_json":"{\"a\":"}`), blockStop(0), stop("tool_use")),
			Want: errcode.ModelProtocol, Requests: 1, AfterHeaders: true},
		modeltest.Case{Name: "input delta outside a block", Handler: sse(first,
			delta(4, `{"type":"input_json_delta","partial_json":"{}"}`), stop("tool_use")),
			Want: errcode.ModelProtocol, Requests: 1, AfterHeaders: true},
	)
	modeltest.RunFailures(t, cases, openWith)
}

func TestRetries(t *testing.T) {
	t.Parallel()
	modeltest.RunRetries(t, openWith, okHandler)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	srv := modeltest.HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ev("message_start", start)+blockStart(0, `{"type":"text","text":""}`)+delta(0, `{"type":"text_delta","text":"a"}`))
		w.(http.Flusher).Flush()
		modeltest.Hang(r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := open(t, srv.URL, nil).Stream(ctx, modeltest.Request())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ev, err := s.Next(); err != nil || ev.Text != "a" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Next()
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after the end = %v, want the same error again", err)
	}
}

// TestCredentialChainIgnored: the SDK's ANTHROPIC_* variables must not
// redirect the call or add credentials.
func TestCredentialChainIgnored(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	got := make(chan string, 1)
	srv := modeltest.HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("X-Api-Key") + "|" + r.Header.Get("Authorization")
		okHandler(w, r)
	})
	if _, err := modeltest.Drain(context.Background(), open(t, srv.URL, nil)); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != modeltest.Key+"|" {
		t.Errorf("credentials sent = %q", h)
	}
}

func TestNewNeedsKeyAndModel(t *testing.T) {
	t.Parallel()
	modeltest.RunNeedsKeyAndModel(t, func(cfg model.Config) error {
		_, err := New(cfg, nil)
		return err
	})
}

// TestConnectionReuse: reading on to the end of the response after
// message_stop lets consecutive calls share one connection.
func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	modeltest.RunConnectionReuse(t, openWith, okHandler)
}

func TestProviderNeverPrintsKey(t *testing.T) {
	t.Parallel()
	modeltest.RunKeyNeverPrinted(t, openWith)
}
