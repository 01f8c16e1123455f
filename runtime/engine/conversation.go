package engine

import (
	"context"
	"encoding/json"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"
)

// conversation rebuilds what the model sees from the log: the last
// ReplayTurns turns of the session up to and including t's prompt. The
// log is the only memory, so a restarted runtime continues a session
// exactly where the log ends.
func (e *Engine) conversation(ctx context.Context, t *task) ([]model.Message, error) {
	start, err := e.store.ReplayStart(ctx, t.sess.id, e.lim.ReplayTurns)
	if err != nil {
		return nil, e.storeErr(err)
	}
	var f folder
	after := start - 1
	for after < t.queuedSeq {
		evs, err := e.store.Events(ctx, t.sess.id, after, replayBatch)
		if err != nil {
			return nil, e.storeErr(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > t.queuedSeq {
				break
			}
			f.add(ev)
			after = ev.Seq
		}
	}
	return f.messages(), nil
}

// folder folds log events into model messages: a prompt is a user
// message; text and tool calls up to the next tool result form one
// assistant message; each tool result is a tool message. Calls a turn left
// without a result (a crash, a cancel) get an error result, because
// providers require an answer to every call.
type folder struct {
	msgs []model.Message
	cur  *model.Message // assistant message being built
	open []string       // tool calls of cur without a result yet
}

func (f *folder) add(ev store.Event) {
	switch ev.Type {
	case EvTaskQueued:
		var b TaskQueuedBody
		json.Unmarshal(ev.Body, &b)
		f.endTurn()
		f.msgs = append(f.msgs, model.Message{Role: model.RoleUser, Text: b.Text})
	case EvMessageDelta:
		var b TextBody
		json.Unmarshal(ev.Body, &b)
		f.assistant().Text += b.Text
	case EvToolCall:
		var b ToolCallBody
		json.Unmarshal(ev.Body, &b)
		a := f.assistant()
		a.ToolCalls = append(a.ToolCalls, model.ToolCall{ID: b.ToolCallID, Name: b.Name, Arguments: b.Arguments})
		f.open = append(f.open, b.ToolCallID)
	case EvToolResult:
		var b ToolResultBody
		json.Unmarshal(ev.Body, &b)
		f.flushAssistant()
		for i, id := range f.open {
			if id == b.ToolCallID {
				f.open = append(f.open[:i], f.open[i+1:]...)
				break
			}
		}
		f.msgs = append(f.msgs, model.Message{Role: model.RoleTool, ToolCallID: b.ToolCallID, Text: b.Text, IsError: b.IsError})
	default:
		if IsTerminal(ev.Type) {
			f.endTurn()
		}
	}
}

// assistant returns the assistant message being built, starting a new one
// after a user message or a tool result.
func (f *folder) assistant() *model.Message {
	if f.cur == nil {
		f.cur = &model.Message{Role: model.RoleAssistant}
	}
	return f.cur
}

func (f *folder) flushAssistant() {
	if f.cur != nil {
		f.msgs = append(f.msgs, *f.cur)
		f.cur = nil
	}
}

// endTurn closes the assistant message and answers its open calls.
func (f *folder) endTurn() {
	f.flushAssistant()
	for _, id := range f.open {
		f.msgs = append(f.msgs, model.Message{Role: model.RoleTool, ToolCallID: id, IsError: true,
			Text: errcode.ToolText(errcode.ToolResultUnknown, "The tool call did not finish.")})
	}
	f.open = nil
}

func (f *folder) messages() []model.Message {
	f.endTurn()
	return f.msgs
}
