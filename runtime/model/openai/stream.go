package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/httpfail"
)

// Bounds on what one answer may assemble; past them the stream is a
// protocol error rather than unbounded memory.
const (
	maxToolCalls = 128
	maxArgBytes  = 4 << 20
)

// stream turns Chat Completions chunks into model events. Next is called
// from one goroutine; Close may be called from any.
type stream struct {
	ctx    context.Context
	sse    *ssestream.Stream[oai.ChatCompletionChunk]
	body   io.Closer
	logger *slog.Logger
	closed atomic.Bool

	pending []model.Event
	err     error // sticky: io.EOF after Done, or the failure

	calls    map[int64]*call
	argBytes int
	refusal  bool
	// finished: finish_reason arrived; tail (the tool calls and Done) is
	// handed out once the response ends, so the connection can be reused.
	finished bool
	tail     []model.Event
}

// call is a tool call being assembled from fragments.
type call struct {
	index int64
	id    string
	name  string
	args  strings.Builder
}

func newStream(ctx context.Context, sse *ssestream.Stream[oai.ChatCompletionChunk], raw *http.Response, logger *slog.Logger) *stream {
	s := &stream{ctx: ctx, sse: sse, logger: logger, calls: map[int64]*call{}}
	if raw != nil {
		s.body = raw.Body
	}
	return s
}

// Next returns the next event; after Done it returns io.EOF.
func (s *stream) Next() (model.Event, error) {
	for {
		if len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			return ev, nil
		}
		if s.err != nil {
			return model.Event{}, s.err
		}
		if !s.sse.Next() {
			if s.finished && !s.closed.Load() && s.ctx.Err() == nil {
				// The answer was complete; how the rest ended does not matter.
				s.pending, s.err = s.tail, io.EOF
				s.sse.Close()
				continue
			}
			s.err = s.endErr()
			continue
		}
		if s.finished {
			// A usage chunk, or anything else after finish_reason.
			continue
		}
		if err := s.absorb(s.sse.Current()); err != nil {
			s.fail(err)
		}
	}
}

// Close releases the connection; Next then returns httpfail.ErrClosed.
func (s *stream) Close() error {
	s.closed.Store(true)
	if s.body != nil {
		return s.body.Close()
	}
	return nil
}

// absorb turns one chunk into pending events.
func (s *stream) absorb(ch oai.ChatCompletionChunk) error {
	for _, c := range ch.Choices {
		if c.Index != 0 {
			// Only one choice is ever asked for.
			continue
		}
		d := c.Delta
		if r := reasoning(d); r != "" {
			s.pending = append(s.pending, model.Event{Kind: model.ThinkingDelta, Text: r})
		}
		if d.Content != "" {
			s.pending = append(s.pending, model.Event{Kind: model.TextDelta, Text: d.Content})
		}
		if d.Refusal != "" {
			s.refusal = true
			s.pending = append(s.pending, model.Event{Kind: model.TextDelta, Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			if err := s.fragment(tc); err != nil {
				return err
			}
		}
		if c.FinishReason != "" {
			return s.finish(c.FinishReason)
		}
	}
	return nil
}

// fragment adds one tool-call fragment, keyed by its index.
func (s *stream) fragment(tc oai.ChatCompletionChunkChoiceDeltaToolCall) error {
	c := s.calls[tc.Index]
	if c == nil {
		if len(s.calls) >= maxToolCalls {
			return httpfail.Protocol(httpfail.Reason(fmt.Sprintf("more than %d tool calls", maxToolCalls)))
		}
		c = &call{index: tc.Index}
		s.calls[tc.Index] = c
	}
	if c.id == "" {
		c.id = tc.ID
	}
	// Servers send the name whole in the first fragment; later repeats
	// are ignored rather than concatenated.
	if c.name == "" {
		c.name = tc.Function.Name
	}
	s.argBytes += len(tc.Function.Arguments)
	if s.argBytes > maxArgBytes {
		return httpfail.Protocol(httpfail.Reason(fmt.Sprintf("tool call arguments exceed %d bytes", maxArgBytes)))
	}
	c.args.WriteString(tc.Function.Arguments)
	return nil
}

// finish prepares the assembled tool calls and Done; they are handed out
// when the response ends ([DONE], normally right away), or FinishGrace
// later.
func (s *stream) finish(reason string) error {
	calls := make([]*call, 0, len(s.calls))
	for _, c := range s.calls {
		calls = append(calls, c)
	}
	slices.SortFunc(calls, func(a, b *call) int { return cmp.Compare(a.index, b.index) })
	for _, c := range calls {
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) || args[0] != '{' {
			return httpfail.Protocol(httpfail.Reason("tool call arguments are not a JSON object"))
		}
		if c.name == "" {
			return httpfail.Protocol(httpfail.Reason("tool call without a name"))
		}
		id := c.id
		if id == "" {
			// Some compatible servers omit ids; the runtime needs one to
			// pair the result with the call.
			id = "call_" + strconv.FormatInt(c.index, 10)
		}
		s.tail = append(s.tail, model.Event{Kind: model.ToolCallDone,
			Call: model.ToolCall{ID: id, Name: c.name, Arguments: json.RawMessage(args)}})
	}
	s.tail = append(s.tail, model.Event{Kind: model.Done, StopReason: stopReason(reason, len(calls) > 0, s.refusal)})
	s.finished = true
	if s.body != nil {
		httpfail.Finishing(s.body, httpfail.FinishGrace)
	}
	return nil
}

// endErr says why the chunk stream ended before a finish_reason.
func (s *stream) endErr() error {
	if s.closed.Load() {
		return httpfail.ErrClosed
	}
	if s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	e := httpfail.StreamEnded(s.sse.Err(), func(err error) bool {
		var serr *ssestream.StreamError
		return errors.As(err, &serr)
	})
	s.logger.Debug("model stream ended", slog.String("provider", "openai"), slog.String("code", string(errcode.CodeOf(e))))
	return e
}

func (s *stream) fail(err error) {
	s.err = err
	s.pending = nil
	s.sse.Close()
}

// reasoning returns a reasoning delta: DeepSeek, vLLM and the lab stub
// send "reasoning_content", OpenRouter-style servers "reasoning".
func reasoning(d oai.ChatCompletionChunkChoiceDelta) string {
	for _, k := range [...]string{"reasoning_content", "reasoning"} {
		f, ok := d.JSON.ExtraFields[k]
		if !ok {
			continue
		}
		var r string
		if json.Unmarshal([]byte(f.Raw()), &r) == nil && r != "" {
			return r
		}
	}
	return ""
}

// stopReason maps finish_reason. Some compatible servers finish a tool
// call with "stop"; the calls decide then.
func stopReason(reason string, haveCalls, refusal bool) string {
	switch reason {
	case "tool_calls", "function_call":
		return model.StopToolUse
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return model.StopRefusal
	}
	switch {
	case haveCalls:
		return model.StopToolUse
	case refusal:
		return model.StopRefusal
	}
	return model.StopEndTurn
}
