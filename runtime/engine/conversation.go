package engine

import (
	"context"
	"encoding/json"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"
)

// convCache is a session's conversation folded up to seq upto.
type convCache struct {
	f    folder
	upto int64
}

// maxCachedChars bounds a cached conversation; a larger one is rebuilt
// from the store for every task instead of kept in memory.
const maxCachedChars = 1 << 20

// conversation rebuilds what the model sees from the log: the last
// ReplayTurns turns of the session up to t's start, which includes t's
// prompt. The
// log is the only memory, so a restarted runtime continues a session
// exactly where the log ends. The folded result is cached on the session
// so the next task reads only the events written since.
func (e *Engine) conversation(ctx context.Context, t *task) ([]model.Message, error) {
	s := t.sess
	s.convMu.Lock()
	defer s.convMu.Unlock()
	c := s.conv
	if c == nil || c.upto >= t.startedSeq {
		start, err := e.store.ReplayStart(ctx, s.id, e.lim.ReplayTurns)
		if err != nil {
			return nil, e.storeErr(err)
		}
		c = &convCache{f: folder{maxTurns: e.lim.ReplayTurns}, upto: start - 1}
	}
	for c.upto < t.startedSeq {
		evs, err := e.store.Events(ctx, s.id, c.upto, replayBatch)
		if err != nil {
			s.conv = nil
			return nil, e.storeErr(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > t.startedSeq {
				break
			}
			c.f.add(ev)
			c.upto = ev.Seq
		}
	}
	msgs := c.f.snapshot()
	s.conv = c
	if c.f.chars > maxCachedChars {
		s.conv = nil
	}
	return msgs, nil
}

// folder folds log events into model messages: a task's prompt is a
// user message, placed when the task starts (a prompt queued behind a
// running task is logged before that task's answer, but the model must
// see it after); text and tool calls up to the next tool result form one
// assistant message; each tool result is a tool message. Calls a turn left
// without a result (a crash, a cancel) get an error result, because
// providers require an answer to every call. A task cancelled before it
// started never reached the model and is left out. With maxTurns set only
// the last maxTurns turns are kept.
type folder struct {
	maxTurns int

	msgs    []model.Message
	turns   []int             // index in msgs where each turn's prompt is
	cur     *model.Message    // assistant message being built
	open    []string          // tool calls of cur without a result yet
	pending map[string]string // prompts of tasks not started yet, by task
	chars   int               // text held, roughly, for the cache bound
}

func (f *folder) add(ev store.Event) {
	switch ev.Type {
	case EvTaskQueued:
		var b TaskQueuedBody
		json.Unmarshal(ev.Body, &b)
		if f.pending == nil {
			f.pending = map[string]string{}
		}
		f.pending[ev.TaskID] = b.Text
		return
	case EvTaskStarted:
		f.begin(ev.TaskID)
		return
	}
	if IsTerminal(ev.Type) {
		if _, never := f.pending[ev.TaskID]; never {
			delete(f.pending, ev.TaskID)
			return
		}
		f.endTurn()
		return
	}
	f.begin(ev.TaskID)
	switch ev.Type {
	case EvMessageDelta:
		var b TextBody
		json.Unmarshal(ev.Body, &b)
		f.assistant().Text += b.Text
		f.chars += len(b.Text)
	case EvToolCall:
		var b ToolCallBody
		json.Unmarshal(ev.Body, &b)
		a := f.assistant()
		a.ToolCalls = append(a.ToolCalls, model.ToolCall{ID: b.ToolCallID, Name: b.Name, Arguments: b.Arguments})
		f.open = append(f.open, b.ToolCallID)
		f.chars += len(b.Arguments)
	case EvToolResult:
		var b ToolResultBody
		json.Unmarshal(ev.Body, &b)
		f.flushAssistant()
		for i, id := range f.open {
			if id == b.ToolCallID {
				f.open = append(f.open[:i:i], f.open[i+1:]...)
				break
			}
		}
		f.push(model.Message{Role: model.RoleTool, ToolCallID: b.ToolCallID, Text: b.Text, IsError: b.IsError})
	}
}

// begin places a task's prompt when the task starts (or first shows up).
func (f *folder) begin(taskID string) {
	text, ok := f.pending[taskID]
	if !ok {
		return
	}
	delete(f.pending, taskID)
	f.endTurn()
	f.turns = append(f.turns, len(f.msgs))
	f.push(model.Message{Role: model.RoleUser, Text: text})
	f.trim()
}

func (f *folder) push(m model.Message) {
	f.msgs = append(f.msgs, m)
	f.chars += len(m.Text)
}

// trim drops the oldest turns beyond maxTurns.
func (f *folder) trim() {
	if f.maxTurns <= 0 || len(f.turns) <= f.maxTurns {
		return
	}
	cut := f.turns[len(f.turns)-f.maxTurns]
	for _, m := range f.msgs[:cut] {
		f.chars -= len(m.Text)
		for _, c := range m.ToolCalls {
			f.chars -= len(c.Arguments)
		}
	}
	f.msgs = append(f.msgs[:0:0], f.msgs[cut:]...)
	f.turns = f.turns[len(f.turns)-f.maxTurns:]
	for i := range f.turns {
		f.turns[i] -= cut
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

// unanswered is the result given for a call that never got one.
func unanswered(id string) model.Message {
	return model.Message{Role: model.RoleTool, ToolCallID: id, IsError: true,
		Text: errcode.ToolText(errcode.ToolResultUnknown, "The tool call did not finish.")}
}

// endTurn closes the assistant message and answers its open calls.
func (f *folder) endTurn() {
	f.flushAssistant()
	for _, id := range f.open {
		f.push(unanswered(id))
	}
	f.open = nil
}

// snapshot returns the messages so far as if the turn had ended, without
// changing the folder.
func (f *folder) snapshot() []model.Message {
	out := make([]model.Message, 0, len(f.msgs)+1+len(f.open))
	out = append(out, f.msgs...)
	if f.cur != nil {
		out = append(out, *f.cur)
	}
	for _, id := range f.open {
		out = append(out, unanswered(id))
	}
	return out
}

func (f *folder) messages() []model.Message {
	f.endTurn()
	return f.msgs
}
