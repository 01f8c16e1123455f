package script

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/model"
)

// End says how a streamed Response ends after its Events.
type End int

const (
	// EndDone: a Done event with Response.Stop.
	EndDone End = iota
	// EndCut: the stream breaks (a provider reports
	// model_stream_interrupted; the stub resets the connection).
	EndCut
	// EndStall: nothing more is sent until the client gives up.
	EndStall
)

// Response is a script's answer to one model request, free of any
// transport: the scripted provider turns it into model events, the lab
// stub into OpenAI-compatible or Anthropic HTTP.
type Response struct {
	// Status, when non-zero, is an HTTP error status answered instead of
	// a stream; RetryAfter is its retry-after header value ("" for none).
	Status     int
	RetryAfter string
	// Hang means no answer at all (not even headers) until the client
	// gives up.
	Hang bool
	// Delay comes before the first event (or the status answer);
	// Interval between two events.
	Delay    time.Duration
	Interval time.Duration
	// Events are TextDelta, ThinkingDelta and ToolCallDone events in
	// order; never Done.
	Events []model.Event
	// End and Stop say how the stream ends after Events.
	End  End
	Stop string
}

// DefaultCompromisedText ends a compromised turn whose step sets no text.
const DefaultCompromisedText = "Done."

// ErrorPrefix starts the text answered for a script error, as the
// upstream fake model did ("script-error: …").
const ErrorPrefix = "script-error: "

// Respond decides the answer to req. s may be nil (the empty script).
//
// If the last user message is a script document (its first line is
// "#!agentos-script"), that script answers instead of s. The step is the
// number of assistant messages after the last user message; once the
// steps are used up the answer is the script's final text, or an echo of
// the last user message.
//
// A script error (an invalid inline script, a substitution that finds no
// value) is returned as err, and resp then holds an end_turn answer with
// the text "script-error: <reason>", which both the provider and the lab
// stub serve so the failure shows in the transcript.
func (s *Script) Respond(req *model.Request) (Response, error) {
	if req == nil {
		req = &model.Request{}
	}
	c := readConversation(req)
	sc := s
	if text, ok := inline(c.lastUserText); ok {
		parsed, err := Parse([]byte(text))
		if err != nil {
			return scriptError(fmt.Errorf("inline script: %w", err))
		}
		sc = parsed
	}
	if sc == nil {
		sc = &Script{}
	}
	resp, err := sc.answer(c, req)
	if err != nil {
		return scriptError(err)
	}
	return resp, nil
}

// conversation is what Respond reads from a request.
type conversation struct {
	users        int // user messages in the whole conversation
	lastUserText string
	step         int      // assistant messages after the last user message
	results      []result // tool results after the last user message
	calledNow    map[string]bool
	scanTexts    []string // user text and tool results, whole conversation
}

func readConversation(req *model.Request) conversation {
	c := conversation{calledNow: map[string]bool{}}
	last := -1
	for i, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			c.users++
			last = i
			c.lastUserText = m.Text
			c.scanTexts = append(c.scanTexts, m.Text)
		case model.RoleTool:
			c.scanTexts = append(c.scanTexts, m.Text)
		}
	}
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case model.RoleAssistant:
			c.step++
			for _, tc := range m.ToolCalls {
				c.calledNow[tc.Name] = true
			}
		case model.RoleTool:
			c.results = append(c.results, parseResult(m.Text))
		}
	}
	return c
}

// inline returns the script document in a user message, if it is one.
func inline(text string) (string, bool) {
	first, _, _ := strings.Cut(text, "\n")
	if strings.TrimSpace(first) != Header {
		return "", false
	}
	return text, true
}

func (s *Script) answer(c conversation, req *model.Request) (Response, error) {
	k := c.step
	if n := len(s.steps); n > 0 && s.steps[n-1].compromised && k >= n-1 {
		return compromised(s.steps[n-1], c, req), nil
	}
	if k >= len(s.steps) {
		text := c.lastUserText
		if s.final != nil {
			text = *s.final
		}
		return Response{Events: textEvents(model.TextDelta, []string{text}), Stop: model.StopEndTurn}, nil
	}
	st := s.steps[k]
	r := Response{Delay: st.delay, Interval: st.interval}
	switch {
	case st.fail != nil && st.fail.hang:
		r.Hang = true
		return r, nil
	case st.fail != nil:
		r.Status, r.RetryAfter = st.fail.status, st.fail.retryAfter
		return r, nil
	case st.echo:
		r.Events = textEvents(model.TextDelta, chunk(c.lastUserText, st.chunkChars))
		r.Stop = model.StopEndTurn
		return r, nil
	}
	r.Events = append(textEvents(model.ThinkingDelta, st.thinking), textEvents(model.TextDelta, st.text)...)
	offered := offeredSet(req)
	for i, tc := range st.toolCalls {
		call, err := tc.resolve(c, offered, k, i)
		if err != nil {
			return Response{}, fmt.Errorf("steps[%d].toolCalls[%d] (line %d): %w", k, i, tc.line, err)
		}
		r.Events = append(r.Events, model.Event{Kind: model.ToolCallDone, Call: call})
	}
	r.Stop = st.stop
	if r.Stop == "" {
		r.Stop = model.StopEndTurn
		if len(st.toolCalls) > 0 {
			r.Stop = model.StopToolUse
		}
	}
	switch {
	case st.cutAfter >= 0:
		r.Events, r.End = r.Events[:min(st.cutAfter, len(r.Events))], EndCut
	case st.hangAfter >= 0:
		r.Events, r.End = r.Events[:min(st.hangAfter, len(r.Events))], EndStall
	}
	return r, nil
}

// resolve makes the model tool call of a scripted call.
func (tc toolCall) resolve(c conversation, offered map[string]bool, step, i int) (model.ToolCall, error) {
	name := tc.name
	if tc.mcp != nil {
		name = resolveRaw(tc.mcp[0], tc.mcp[1], tc.mcp[2], offered)
	}
	args, err := evalTree(tc.args, c.results)
	if err != nil {
		return model.ToolCall{}, err
	}
	raw, err := MarshalArguments(args)
	if err != nil {
		return model.ToolCall{}, err
	}
	id := tc.id
	if id == "" {
		id = callID(c.users, step, i)
	}
	return model.ToolCall{ID: id, Name: name, Arguments: raw}, nil
}

// compromised answers as a model that follows every instruction it finds.
func compromised(st step, c conversation, req *model.Request) Response {
	r := Response{Delay: st.delay, Interval: st.interval}
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
	}
	var calls []model.Event
	for _, f := range scan(c.scanTexts, names) {
		if c.calledNow[f.name] {
			continue
		}
		raw, err := MarshalArguments(f.args)
		if err != nil {
			raw = json.RawMessage(`{}`)
		}
		calls = append(calls, model.Event{Kind: model.ToolCallDone,
			Call: model.ToolCall{ID: callID(c.users, c.step, len(calls)), Name: f.name, Arguments: raw}})
	}
	if len(calls) > 0 {
		r.Events, r.Stop = calls, model.StopToolUse
		return r
	}
	text := st.text
	if text == nil {
		text = []string{DefaultCompromisedText}
	}
	r.Events = append(textEvents(model.ThinkingDelta, st.thinking), textEvents(model.TextDelta, text)...)
	r.Stop = model.StopEndTurn
	return r
}

// callID is deterministic, so transcripts and golden files are stable,
// and unique within a conversation: user turn, step and call index.
func callID(users, step, i int) string {
	return fmt.Sprintf("call_%d_%d_%d", users, step, i)
}

func scriptError(err error) (Response, error) {
	return Response{Events: textEvents(model.TextDelta, []string{ErrorPrefix + err.Error()}), Stop: model.StopEndTurn}, err
}

func textEvents(kind model.EventKind, chunks []string) []model.Event {
	var evs []model.Event
	for _, c := range chunks {
		if c == "" {
			continue
		}
		evs = append(evs, model.Event{Kind: kind, Text: c})
	}
	return evs
}

func chunk(text string, n int) []string {
	if n <= 0 {
		return []string{text}
	}
	return splitRunes(text, n)
}

func offeredSet(req *model.Request) map[string]bool {
	m := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		m[t.Name] = true
	}
	return m
}

// MarshalArguments encodes tool-call arguments without HTML escaping, so
// "<" and "&" reach the tool as written (what a model sends).
func MarshalArguments(v any) (json.RawMessage, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n")), nil
}

// Inline reports whether req's last user message is a script document
// (its first line is Header): a turn such a prompt drives by itself, with
// no script configured.
func Inline(req *model.Request) bool {
	if req == nil {
		return false
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == model.RoleUser {
			_, ok := inline(m.Text)
			return ok
		}
	}
	return false
}
