package engine

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"
)

func TestFolder(t *testing.T) {
	t.Parallel()
	ev := func(typ string, body any) store.Event {
		b, _ := json.Marshal(body)
		return store.Event{Type: typ, Body: b}
	}
	evs := []store.Event{
		ev(EvSessionCreated, SessionCreatedBody{}),
		ev(EvTaskQueued, TaskQueuedBody{Text: "q1"}),
		ev(EvTaskStarted, nil),
		ev(EvThoughtDelta, TextBody{Text: "hmm"}),
		ev(EvMessageDelta, TextBody{Text: "let me "}),
		ev(EvMessageDelta, TextBody{Text: "check"}),
		ev(EvToolCall, ToolCallBody{ToolCallID: "a", Name: "echo", Arguments: json.RawMessage(`{}`)}),
		ev(EvToolCall, ToolCallBody{ToolCallID: "b", Name: "echo", Arguments: json.RawMessage(`{}`)}),
		ev("consent.requested", map[string]string{}),
		ev(EvToolDispatched, ToolRefBody{ToolCallID: "a"}),
		ev(EvToolResult, ToolResultBody{ToolCallID: "a", Text: "ra"}),
		ev(EvToolSettled, ToolSettledBody{ToolCallID: "a"}),
		ev(EvTaskRecoveryRequired, TaskEndBody{}), // crashed before b answered
		ev(EvTaskQueued, TaskQueuedBody{Text: "q2"}),
		ev(EvTaskStarted, nil),
		ev(EvMessageDelta, TextBody{Text: "answer"}),
		ev(EvTaskCompleted, TaskEndBody{}),
	}
	var f folder
	for _, e := range evs {
		f.add(e)
	}
	var got []string
	for _, m := range f.messages() {
		s := string(m.Role) + ":" + m.Text
		for _, c := range m.ToolCalls {
			s += "+" + c.ID
		}
		if m.Role == model.RoleTool {
			s = fmt.Sprintf("tool(%s,%v):%s", m.ToolCallID, m.IsError, m.Text)
		}
		got = append(got, s)
	}
	want := []string{
		"user:q1",
		"assistant:let me check+a+b",
		"tool(a,false):ra",
		"tool(b,true):[agentos:tool_result_unknown] The tool call did not finish.",
		"user:q2",
		"assistant:answer",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("messages\n got %q\nwant %q", got, want)
	}
}

func TestFolderKeepsTheLastTurns(t *testing.T) {
	t.Parallel()
	f := folder{maxTurns: 2}
	for i := range 5 {
		b, _ := json.Marshal(TaskQueuedBody{Text: fmt.Sprint("q", i)})
		task := fmt.Sprint("t", i)
		f.add(store.Event{Type: EvTaskQueued, TaskID: task, Body: b})
		f.add(store.Event{Type: EvTaskStarted, TaskID: task, Body: []byte(`{}`)})
		b, _ = json.Marshal(TextBody{Text: fmt.Sprint("a", i)})
		f.add(store.Event{Type: EvMessageDelta, TaskID: task, Body: b})
		f.add(store.Event{Type: EvTaskCompleted, TaskID: task, Body: []byte(`{}`)})
	}
	var got []string
	for _, m := range f.snapshot() {
		got = append(got, m.Text)
	}
	if fmt.Sprint(got) != "[q3 a3 q4 a4]" {
		t.Fatalf("kept %v", got)
	}
	if f.chars != len("q3a3q4a4") {
		t.Fatalf("chars %d", f.chars)
	}
}

// TestFolderOrdersQueuedPrompts: a prompt queued while another task runs
// is logged before that task's answer, but the model sees it after; a
// prompt cancelled before it started is left out.
func TestFolderOrdersQueuedPrompts(t *testing.T) {
	t.Parallel()
	ev := func(task, typ string, body any) store.Event {
		b, _ := json.Marshal(body)
		return store.Event{TaskID: task, Type: typ, Body: b}
	}
	var f folder
	for _, e := range []store.Event{
		ev("t1", EvTaskQueued, TaskQueuedBody{Text: "first"}),
		ev("t1", EvTaskStarted, nil),
		ev("t2", EvTaskQueued, TaskQueuedBody{Text: "second"}),
		ev("t3", EvTaskQueued, TaskQueuedBody{Text: "dropped"}),
		ev("t1", EvMessageDelta, TextBody{Text: "answer one"}),
		ev("t1", EvTaskCompleted, TaskEndBody{}),
		ev("t3", EvTaskCancelled, TaskEndBody{}),
		ev("t2", EvTaskStarted, nil),
		ev("t2", EvMessageDelta, TextBody{Text: "answer two"}),
	} {
		f.add(e)
	}
	var got []string
	for _, m := range f.snapshot() {
		got = append(got, m.Text)
	}
	if fmt.Sprint(got) != "[first answer one second answer two]" {
		t.Fatalf("messages %q", got)
	}
}
