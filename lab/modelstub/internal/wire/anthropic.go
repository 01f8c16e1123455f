package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// Anthropic is the Messages dialect.
type Anthropic struct{}

func (Anthropic) Name() string { return "anthropic" }

// antBlock is one content block of a request message.
type antBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// antBlocks is content given as a string or a list of blocks.
type antBlocks []antBlock

func (b *antBlocks) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = antBlocks{{Type: "text", Text: s}}
		return nil
	}
	var list []antBlock
	if err := json.Unmarshal(data, &list); err != nil {
		return errors.New("content must be a string or a list of blocks")
	}
	*b = list
	return nil
}

// text joins the text blocks.
func (b antBlocks) text() string {
	var sb strings.Builder
	for _, x := range b {
		if x.Type == "text" {
			sb.WriteString(x.Text)
		}
	}
	return sb.String()
}

type antRequest struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	System    antBlocks `json:"system"`
	Messages  []struct {
		Role    string    `json:"role"`
		Content antBlocks `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

func (Anthropic) Parse(body []byte) (*Parsed, error) {
	var r antRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("malformed Messages request: %v", err)
	}
	if len(r.Messages) == 0 {
		return nil, errors.New("messages: at least one message is required")
	}
	p := &Parsed{Stream: r.Stream, Req: model.Request{Model: r.Model, MaxTokens: r.MaxTokens, System: r.System.text()}}
	for i, m := range r.Messages {
		switch m.Role {
		case "user":
			// Tool results travel in user messages; each is a tool
			// message of its own, and only real text is a user turn.
			var text strings.Builder
			for _, b := range m.Content {
				switch b.Type {
				case "tool_result":
					p.Req.Messages = append(p.Req.Messages, model.Message{Role: model.RoleTool, ToolCallID: b.ToolUseID,
						Text: resultText(b.Content), IsError: b.IsError})
				case "text":
					text.WriteString(b.Text)
				}
			}
			if text.Len() > 0 {
				p.Req.Messages = append(p.Req.Messages, model.Message{Role: model.RoleUser, Text: text.String()})
			}
		case "assistant":
			msg := model.Message{Role: model.RoleAssistant}
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					msg.Text += b.Text
				case "tool_use":
					args := b.Input
					if len(args) == 0 {
						args = json.RawMessage(`{}`)
					}
					msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
				}
			}
			p.Req.Messages = append(p.Req.Messages, msg)
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	for _, t := range r.Tools {
		p.Req.Tools = append(p.Req.Tools, model.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return p, nil
}

// resultText is a tool_result's content as text.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b antBlocks
	if err := json.Unmarshal(raw, &b); err != nil {
		return ""
	}
	return b.text()
}

func (Anthropic) WriteError(w http.ResponseWriter, status int, kind, msg string) {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// blockKind is the content block an event belongs to.
func blockKind(ev model.Event) string {
	switch ev.Kind {
	case model.ThinkingDelta:
		return "thinking"
	case model.ToolCallDone:
		return "tool_use"
	}
	return "text"
}

func (a Anthropic) WriteResponse(ctx context.Context, w http.ResponseWriter, p *Parsed, resp *script.Response, id string) error {
	if !p.Stream {
		return a.writeJSON(ctx, w, p, resp, id)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, v any) error {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	msgID := "msg_stub_" + id
	if err := send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "content": []any{}, "model": p.Req.Model,
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0},
	}}); err != nil {
		return err
	}
	index, open := -1, ""
	closeBlock := func() error {
		if open == "" {
			return nil
		}
		if open == "thinking" {
			if err := send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "signature_delta", "signature": "stub"}}); err != nil {
				return err
			}
		}
		open = ""
		return send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	for i, ev := range resp.Events {
		if i > 0 {
			if err := Sleep(ctx, resp.Interval); err != nil {
				return err
			}
		}
		kind := blockKind(ev)
		if kind != open || kind == "tool_use" {
			if err := closeBlock(); err != nil {
				return err
			}
			index++
			open = kind
			var start map[string]any
			switch kind {
			case "text":
				start = map[string]any{"type": "text", "text": ""}
			case "thinking":
				start = map[string]any{"type": "thinking", "thinking": ""}
			default:
				start = map[string]any{"type": "tool_use", "id": ev.Call.ID, "name": ev.Call.Name, "input": map[string]any{}}
			}
			if err := send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start}); err != nil {
				return err
			}
		}
		var delta map[string]any
		switch kind {
		case "text":
			delta = map[string]any{"type": "text_delta", "text": ev.Text}
		case "thinking":
			delta = map[string]any{"type": "thinking_delta", "thinking": ev.Text}
		default:
			for _, part := range split(string(ev.Call.Arguments), 2) {
				if err := send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}}); err != nil {
					return err
				}
			}
			continue
		}
		if err := send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": delta}); err != nil {
			return err
		}
	}
	switch resp.End {
	case script.EndCut:
		return ErrCut
	case script.EndStall:
		<-ctx.Done()
		return ctx.Err()
	}
	if err := closeBlock(); err != nil {
		return err
	}
	stop := resp.Stop
	if stop == "" {
		stop = model.StopEndTurn
	}
	if err := send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 0}}); err != nil {
		return err
	}
	return send("message_stop", map[string]any{"type": "message_stop"})
}

// writeJSON answers a non-streamed request with one message.
func (Anthropic) writeJSON(ctx context.Context, w http.ResponseWriter, p *Parsed, resp *script.Response, id string) error {
	switch resp.End {
	case script.EndCut:
		return ErrCut
	case script.EndStall:
		<-ctx.Done()
		return ctx.Err()
	}
	var content []any
	var cur strings.Builder
	curKind := ""
	flush := func() {
		switch curKind {
		case "text":
			content = append(content, map[string]any{"type": "text", "text": cur.String()})
		case "thinking":
			content = append(content, map[string]any{"type": "thinking", "thinking": cur.String(), "signature": "stub"})
		}
		cur.Reset()
		curKind = ""
	}
	for _, ev := range resp.Events {
		kind := blockKind(ev)
		if kind != curKind {
			flush()
		}
		if kind == "tool_use" {
			var input any = map[string]any{}
			json.Unmarshal(ev.Call.Arguments, &input)
			content = append(content, map[string]any{"type": "tool_use", "id": ev.Call.ID, "name": ev.Call.Name, "input": input})
			continue
		}
		curKind = kind
		cur.WriteString(ev.Text)
	}
	flush()
	stop := resp.Stop
	if stop == "" {
		stop = model.StopEndTurn
	}
	if content == nil {
		content = []any{}
	}
	b, _ := json.Marshal(map[string]any{"id": "msg_stub_" + id, "type": "message", "role": "assistant", "model": p.Req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0}})
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(append(b, '\n'))
	return err
}
