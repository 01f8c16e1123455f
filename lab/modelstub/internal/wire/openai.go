package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// OpenAI is the Chat Completions dialect.
type OpenAI struct{}

func (OpenAI) Name() string { return "openai" }

// content is a message content: a string or a list of parts.
type oaiContent struct {
	text string
	set  bool
}

func (c *oaiContent) UnmarshalJSON(b []byte) error {
	c.set = true
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.text)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("content must be a string or a list of parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
	}
	c.text = sb.String()
	return nil
}

type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string        `json:"role"`
		Content    oaiContent    `json:"content"`
		ToolCalls  []oaiToolCall `json:"tool_calls"`
		ToolCallID string        `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream              bool `json:"stream"`
	MaxTokens           int  `json:"max_tokens"`
	MaxCompletionTokens int  `json:"max_completion_tokens"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (OpenAI) Parse(body []byte) (*Parsed, error) {
	var r oaiRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("malformed Chat Completions request: %v", err)
	}
	if len(r.Messages) == 0 {
		return nil, errors.New("messages must not be empty")
	}
	p := &Parsed{Stream: r.Stream, Req: model.Request{Model: r.Model, MaxTokens: max(r.MaxTokens, r.MaxCompletionTokens)}}
	if r.StreamOptions != nil {
		p.IncludeUsage = r.StreamOptions.IncludeUsage
	}
	var system []string
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, m.Content.text)
		case "user":
			p.Req.Messages = append(p.Req.Messages, model.Message{Role: model.RoleUser, Text: m.Content.text})
		case "assistant":
			msg := model.Message{Role: model.RoleAssistant, Text: m.Content.text}
			for _, tc := range m.ToolCalls {
				args := json.RawMessage(tc.Function.Arguments)
				if len(bytes.TrimSpace(args)) == 0 {
					args = json.RawMessage(`{}`)
				}
				msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
			}
			p.Req.Messages = append(p.Req.Messages, msg)
		case "tool":
			p.Req.Messages = append(p.Req.Messages, model.Message{Role: model.RoleTool, Text: m.Content.text, ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	p.Req.System = strings.Join(system, "\n\n")
	for _, t := range r.Tools {
		p.Req.Tools = append(p.Req.Tools, model.Tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters})
	}
	return p, nil
}

func (OpenAI) WriteError(w http.ResponseWriter, status int, kind, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": kind, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

type oaiDelta struct {
	Role             string             `json:"role,omitempty"`
	Content          *string            `json:"content,omitempty"`
	ReasoningContent *string            `json:"reasoning_content,omitempty"`
	ToolCalls        []oaiDeltaToolCall `json:"tool_calls,omitempty"`
}

type oaiDeltaToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiChunk struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []oaiChoice `json:"choices"`
	Usage   any         `json:"usage,omitempty"`
}

type oaiChoice struct {
	Index        int      `json:"index"`
	Delta        oaiDelta `json:"delta"`
	FinishReason *string  `json:"finish_reason"`
}

var zeroUsage = map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}

func (o OpenAI) WriteResponse(ctx context.Context, w http.ResponseWriter, p *Parsed, resp *script.Response, id string) error {
	if !p.Stream {
		return o.writeJSON(ctx, w, p, resp, id)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	chunk := oaiChunk{ID: "chatcmpl-stub-" + id, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: p.Req.Model}
	send := func(d oaiDelta, finish *string) error {
		chunk.Choices = []oaiChoice{{Delta: d, FinishReason: finish}}
		b, _ := json.Marshal(chunk)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send(oaiDelta{Role: "assistant"}, nil); err != nil {
		return err
	}
	calls := 0
	for i, ev := range resp.Events {
		if i > 0 {
			if err := Sleep(ctx, resp.Interval); err != nil {
				return err
			}
		}
		switch ev.Kind {
		case model.TextDelta:
			if err := send(oaiDelta{Content: &ev.Text}, nil); err != nil {
				return err
			}
		case model.ThinkingDelta:
			if err := send(oaiDelta{ReasoningContent: &ev.Text}, nil); err != nil {
				return err
			}
		case model.ToolCallDone:
			// The call goes out in fragments, as providers send them:
			// id and name first, the arguments in pieces after.
			first := oaiDeltaToolCall{Index: calls, ID: ev.Call.ID, Type: "function"}
			first.Function.Name = ev.Call.Name
			if err := send(oaiDelta{ToolCalls: []oaiDeltaToolCall{first}}, nil); err != nil {
				return err
			}
			for _, part := range split(string(ev.Call.Arguments), 2) {
				frag := oaiDeltaToolCall{Index: calls}
				frag.Function.Arguments = part
				if err := send(oaiDelta{ToolCalls: []oaiDeltaToolCall{frag}}, nil); err != nil {
					return err
				}
			}
			calls++
		}
	}
	switch resp.End {
	case script.EndCut:
		return ErrCut
	case script.EndStall:
		<-ctx.Done()
		return ctx.Err()
	}
	finish := FinishReasons[resp.Stop]
	if finish == "" {
		finish = "stop"
	}
	if err := send(oaiDelta{}, &finish); err != nil {
		return err
	}
	if p.IncludeUsage {
		chunk.Choices = []oaiChoice{}
		chunk.Usage = zeroUsage
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err != nil {
		return err
	}
	return rc.Flush()
}

// writeJSON answers a non-streamed request with one document.
func (OpenAI) writeJSON(ctx context.Context, w http.ResponseWriter, p *Parsed, resp *script.Response, id string) error {
	switch resp.End {
	case script.EndCut:
		return ErrCut
	case script.EndStall:
		<-ctx.Done()
		return ctx.Err()
	}
	var text, reasoning strings.Builder
	var calls []oaiToolCall
	for _, ev := range resp.Events {
		switch ev.Kind {
		case model.TextDelta:
			text.WriteString(ev.Text)
		case model.ThinkingDelta:
			reasoning.WriteString(ev.Text)
		case model.ToolCallDone:
			var c oaiToolCall
			c.ID, c.Type = ev.Call.ID, "function"
			c.Function.Name, c.Function.Arguments = ev.Call.Name, string(ev.Call.Arguments)
			calls = append(calls, c)
		}
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if text.Len() > 0 {
		msg["content"] = text.String()
	}
	if reasoning.Len() > 0 {
		msg["reasoning_content"] = reasoning.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	finish := FinishReasons[resp.Stop]
	if finish == "" {
		finish = "stop"
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-stub-" + id, "object": "chat.completion", "created": time.Now().Unix(), "model": p.Req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   zeroUsage,
	})
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(append(b, '\n'))
	return err
}

// split cuts s into at most n pieces of about equal length, on rune
// boundaries; "" stays one empty piece.
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) < n || n <= 1 {
		return []string{s}
	}
	size := (len(r) + n - 1) / n
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}
