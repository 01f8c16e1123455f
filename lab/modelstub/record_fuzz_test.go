package modelstub

import (
	"testing"

	"github.com/agentoslab/agentlab/runtime/model/script"
	"gopkg.in/yaml.v3"
)

// FuzzParseAnswer: whatever a provider sends, the recorder's step is a
// valid script step (a recording that does not parse cannot be replayed).
func FuzzParseAnswer(f *testing.F) {
	f.Add(0, []byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\",\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"n\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n"+
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
	f.Add(1, []byte(`{"choices":[{"message":{"content":"hi","tool_calls":[{"id":"x","function":{"name":"t","arguments":"{}"}}]},"finish_reason":"stop"}]}`))
	f.Add(2, []byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\n"+
		"data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"+
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add(3, []byte(`{"content":[{"type":"thinking","thinking":"h"},{"type":"text","text":"x"}],"stop_reason":"max_tokens"}`))
	f.Add(0, []byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":2}]}}]}\n\n"))
	f.Add(1, []byte(`{"choices":[{"message":{"tool_calls":[{"id":"","function":{"name":"","arguments":"[1]"}}]},"finish_reason":"tool_calls"}]}`))
	f.Add(2, []byte("data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\\u0000\\ud800\"}}\n\n"))
	f.Fuzz(func(t *testing.T, kind int, body []byte) {
		api, ct := APIOpenAI, "application/json"
		if kind&1 == 0 {
			ct = "text/event-stream"
		}
		if kind&2 != 0 {
			api = APIAnthropic
		}
		st := parseAnswer(api, ct, body)
		doc, err := yaml.Marshal(&recDoc{Steps: []recStep{*st}})
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := script.Parse(doc); err != nil {
			t.Fatalf("the recorded step does not parse: %v\n%s", err, doc)
		}
	})
}
