package wire

import (
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/model"
)

func TestParseOpenAI(t *testing.T) {
	p, err := OpenAI{}.Parse([]byte(`{"model":"m","max_completion_tokens":9,"stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"system","content":"a"},{"role":"developer","content":[{"type":"text","text":"b"}]},
		{"role":"user","content":"hi"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"n","arguments":""}}]},
		{"role":"tool","tool_call_id":"c1","content":"r"}],
		"tools":[{"type":"function","function":{"name":"n","description":"d","parameters":{"type":"object"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Req
	if r.Model != "m" || r.MaxTokens != 9 || !p.Stream || !p.IncludeUsage || r.System != "a\n\nb" || len(r.Messages) != 3 ||
		r.Messages[1].Role != model.RoleAssistant || string(r.Messages[1].ToolCalls[0].Arguments) != "{}" ||
		r.Messages[2].Role != model.RoleTool || r.Messages[2].ToolCallID != "c1" || r.Tools[0].Name != "n" {
		t.Errorf("parsed %+v", p)
	}
	for body, want := range map[string]string{
		`{"messages":[]}`: "must not be empty",
		`{"messages":[{"role":"robot","content":"x"}]}`: "unknown role",
		`{"messages":[{"role":"user","content":5}]}`:    "string or a list",
		`[`: "malformed",
	} {
		if _, err := (OpenAI{}).Parse([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestParseAnthropic(t *testing.T) {
	p, err := Anthropic{}.Parse([]byte(`{"model":"m","max_tokens":5,"system":"s","stream":true,"messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"ok"},{"type":"tool_use","id":"1","name":"n","input":{"a":1}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":[{"type":"text","text":"r"}],"is_error":true}]}],
		"tools":[{"name":"n","input_schema":{"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Req
	// The tool result is a tool message, not a user turn: the step index
	// of a script counts assistant messages after the last user message.
	if r.System != "s" || len(r.Messages) != 3 || r.Messages[1].Text != "ok" || string(r.Messages[1].ToolCalls[0].Arguments) != `{"a":1}` ||
		r.Messages[2].Role != model.RoleTool || !r.Messages[2].IsError || r.Messages[2].Text != "r" {
		t.Errorf("parsed %+v", r.Messages)
	}
}

func FuzzParseOpenAI(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"n","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"r"}]}],"tools":[{"type":"function","function":{"name":"n","parameters":{}}}],"stream":true}`))
	f.Add([]byte(`{"messages":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := OpenAI{}.Parse(body)
		if err == nil && p == nil {
			t.Fatal("nil request without error")
		}
	})
}

func FuzzParseAnthropic(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":[{"type":"text","text":"r"}]},{"type":"text","text":"more"}]}],"stream":true}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":5}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := Anthropic{}.Parse(body)
		if err == nil && p == nil {
			t.Fatal("nil request without error")
		}
	})
}
