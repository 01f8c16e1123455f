package openai

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
	"time"

	"github.com/agentoslab/agentlab/internal/golden"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/httpfail"
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
	p, err := New(model.Config{Provider: "openai", BaseURL: baseURL, Model: "test-model", Key: modeltest.Key,
		Timeout: timeout}, &Options{Logger: o.Logger, Retry: modeltest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// chunk is one streamed chunk with a single choice.
func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, fr)
}

func sse(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			io.WriteString(w, c)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

var okHandler = sse(chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"))

func TestStreamAssemblesFragments(t *testing.T) {
	t.Parallel()
	srv := modeltest.HTTP(t, false, sse(
		chunk(`{"role":"assistant","reasoning_content":"let me think"}`, ""),
		chunk(`{"content":"Hel"}`, ""),
		chunk(`{"content":"lo"}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"mcp__notes__notes__note_create","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"te"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_skill","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"xt\":\"hi\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
	))
	evs, err := modeltest.Collect(context.Background(), open(t, srv.URL, nil), modeltest.Request())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Event{
		{Kind: model.ThinkingDelta, Text: "let me think"},
		{Kind: model.TextDelta, Text: "Hel"},
		{Kind: model.TextDelta, Text: "lo"},
		{Kind: model.ToolCallDone, Call: model.ToolCall{ID: "call_a", Name: "mcp__notes__notes__note_create", Arguments: json.RawMessage(`{"text":"hi"}`)}},
		{Kind: model.ToolCallDone, Call: model.ToolCall{ID: "call_b", Name: "read_skill", Arguments: json.RawMessage(`{}`)}},
		{Kind: model.Done, StopReason: model.StopToolUse},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}
}

func TestFinishReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		finish, want string
		delta        string
	}{
		{"stop", model.StopEndTurn, `{"content":"x"}`},
		{"tool_calls", model.StopToolUse, `{"tool_calls":[{"index":0,"id":"c","function":{"name":"t","arguments":"{}"}}]}`},
		{"length", model.StopMaxTokens, `{"content":"x"}`},
		{"content_filter", model.StopRefusal, `{"content":"x"}`},
		// Some servers finish tool calls with "stop".
		{"stop", model.StopToolUse, `{"tool_calls":[{"index":0,"id":"c","function":{"name":"t","arguments":"{}"}}]}`},
		{"stop", model.StopRefusal, `{"refusal":"I can't"}`},
		{"something_new", model.StopEndTurn, `{"content":"x"}`},
	} {
		t.Run(tc.finish+"/"+tc.want, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.HTTP(t, false, sse(chunk(tc.delta, ""), chunk(`{}`, tc.finish)))
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

// TestRequest pins what goes over the wire: system prompt first, tool
// calls and tool results, function tools, max_tokens, the stream flag,
// the path under the base URL, the request's model over the configured
// one, and the key in the Authorization header only.
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
	p, err := New(model.Config{BaseURL: srv.URL + "/v1/", Model: "default-model", Key: modeltest.Key},
		&Options{Retry: modeltest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	req := conversation()
	req.Model = "switched-model"
	if _, err := modeltest.Collect(context.Background(), p, req); err != nil {
		t.Fatal(err)
	}
	s := <-got
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, s.body, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "request.golden.json"), pretty.Bytes())
	if s.path != "/v1/chat/completions" {
		t.Errorf("path = %q", s.path)
	}
	if got := s.hdr.Get("Authorization"); got != "Bearer "+modeltest.Key {
		t.Errorf("Authorization = %q", got)
	}
	for k, vs := range s.hdr {
		for _, v := range vs {
			if k != "Authorization" && strings.Contains(v, modeltest.Key) {
				t.Errorf("header %s carries the key", k)
			}
		}
	}
}

func TestMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 1)
	srv := modeltest.HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		got <- m
		okHandler(w, r)
	})
	p, err := New(model.Config{BaseURL: srv.URL, Model: "m", Key: modeltest.Key},
		&Options{Retry: modeltest.FastRetry, MaxCompletionTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeltest.Collect(context.Background(), p, conversation()); err != nil {
		t.Fatal(err)
	}
	m := <-got
	if m["max_completion_tokens"] != float64(512) || m["max_tokens"] != nil {
		t.Errorf("max_completion_tokens = %v, max_tokens = %v", m["max_completion_tokens"], m["max_tokens"])
	}
}

func conversation() *model.Request {
	return &model.Request{
		System: "You are the AgentOS agent.",
		Messages: []model.Message{
			{Role: model.RoleUser, Text: "make a note saying hi"},
			{Role: model.RoleAssistant, Text: "Sure.", ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "mcp__notes__notes__note_create", Arguments: json.RawMessage(`{"text":"hi"}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", Text: `{"id":7}`},
			{Role: model.RoleAssistant, Text: "Done."},
			{Role: model.RoleUser, Text: "thanks"},
		},
		Tools: []model.Tool{
			{Name: "mcp__notes__notes__note_create", Description: "Create a note.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
			{Name: "read_skill"},
		},
		MaxTokens: 512,
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	first := chunk(`{"role":"assistant","content":"partial"}`, "")
	cases := modeltest.Failures(first, "data: {this is not json\n\n")
	cases = append(cases,
		modeltest.Case{Name: "error inside the stream", Handler: sse(first, `data: {"error":{"message":"overloaded"}}`+"\n\n"),
			Want: errcode.ModelStreamInterrupted, Requests: 1, AfterHeaders: true},
		modeltest.Case{Name: "done without finish", Handler: sse(first),
			Want: errcode.ModelStreamInterrupted, Requests: 1, AfterHeaders: true},
		modeltest.Case{Name: "tool arguments not JSON", Handler: sse(
			chunk(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"t","arguments":"{\"a\":"}}]}`, ""),
			chunk(`{}`, "tool_calls")),
			Want: errcode.ModelProtocol, Requests: 1, AfterHeaders: true},
		modeltest.Case{Name: "tool arguments not an object", Handler: sse(
			chunk(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"t","arguments":"[1]"}}]}`, ""),
			chunk(`{}`, "tool_calls")),
			Want: errcode.ModelProtocol, Requests: 1, AfterHeaders: true},
	)
	modeltest.RunFailures(t, cases, openWith)
}

func TestRetries(t *testing.T) {
	t.Parallel()
	modeltest.RunRetries(t, openWith, okHandler)
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := modeltest.HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(`{"content":"a"}`, ""))
		w.(http.Flusher).Flush()
		modeltest.Hang(r)
	})
	p, err := New(model.Config{BaseURL: srv.URL, Model: "m", Key: modeltest.Key},
		&Options{Retry: modeltest.FastRetry, IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = modeltest.Drain(context.Background(), p)
	e := modeltest.Check(t, err, errcode.ModelStreamInterrupted, nil)
	if !errors.Is(e, httpfail.ErrIdle) {
		t.Errorf("cause = %v, want ErrIdle", e.Err)
	}
}

// TestCancelAndClose: cancelling ctx or closing the stream ends a
// blocked Next at once, with ctx's error or ErrClosed, never a model code.
func TestCancelAndClose(t *testing.T) {
	t.Parallel()
	hold := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(`{"content":"a"}`, ""))
		w.(http.Flusher).Flush()
		modeltest.Hang(r)
	}
	for _, how := range []string{"cancel", "close"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.HTTP(t, false, hold)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := open(t, srv.URL, nil).Stream(ctx, modeltest.Request())
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := s.Next(); err != nil || ev.Text != "a" {
				t.Fatalf("first event %+v, %v", ev, err)
			}
			errc := make(chan error, 1)
			go func() {
				_, err := s.Next()
				errc <- err
			}()
			if how == "cancel" {
				cancel()
			} else {
				s.Close()
			}
			err = <-errc
			switch how {
			case "cancel":
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
			case "close":
				if !errors.Is(err, httpfail.ErrClosed) {
					t.Errorf("err = %v, want ErrClosed", err)
				}
			}
			s.Close()
		})
	}
}

// TestEnvironmentIgnored: the SDK's OPENAI_* variables must not redirect
// the call or replace the key.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Extra: yes")
	auth := make(chan string, 1)
	srv := modeltest.HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization") + "|" + r.Header.Get("X-Extra")
		okHandler(w, r)
	})
	if _, err := modeltest.Drain(context.Background(), open(t, srv.URL, nil)); err != nil {
		t.Fatal(err)
	}
	if got := <-auth; got != "Bearer "+modeltest.Key+"|" {
		t.Errorf("headers = %q", got)
	}
}

func TestNewNeedsKeyAndModel(t *testing.T) {
	t.Parallel()
	modeltest.RunNeedsKeyAndModel(t, func(cfg model.Config) error {
		_, err := New(cfg, nil)
		return err
	})
}

// TestConnectionReuse: reading on to [DONE] lets consecutive calls share
// one connection (no new TCP and TLS handshake per model call).
func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	modeltest.RunConnectionReuse(t, openWith, sse(chunk(`{"content":"a"}`, ""), chunk(`{}`, "stop"),
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n\n"))
}

// TestFinishWithoutDone: a server that sends finish_reason but neither
// [DONE] nor the end of the response still gives a complete answer,
// once the finish grace has passed.
func TestFinishWithoutDone(t *testing.T) {
	t.Parallel()
	srv := modeltest.HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"t","arguments":"{}"}}]}`, "")+chunk(`{}`, "tool_calls"))
		w.(http.Flusher).Flush()
		modeltest.Hang(r)
	})
	evs, err := modeltest.Collect(context.Background(), open(t, srv.URL, nil), modeltest.Request())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Call.Name != "t" || evs[1].StopReason != model.StopToolUse {
		t.Errorf("events %+v", evs)
	}
}

func TestProviderNeverPrintsKey(t *testing.T) {
	t.Parallel()
	modeltest.RunKeyNeverPrinted(t, openWith)
}
