package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

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

// stream turns Messages stream events into model events. Next is called
// from one goroutine; Close may be called from any.
type stream struct {
	ctx    context.Context
	sse    *ssestream.Stream[sdk.MessageStreamEventUnion]
	body   io.Closer
	logger *slog.Logger
	closed atomic.Bool

	pending []model.Event
	err     error // sticky: io.EOF after Done, or the failure

	blocks   map[int64]*toolUse // open tool_use blocks by index
	ncalls   int
	argBytes int
	stop     sdk.StopReason
	// finished: message_stop arrived; Done is handed out once the
	// response ends, so the connection can be reused.
	finished bool
}

type toolUse struct {
	id, name string
	input    strings.Builder
}

func newStream(ctx context.Context, sse *ssestream.Stream[sdk.MessageStreamEventUnion], raw *http.Response, logger *slog.Logger) *stream {
	s := &stream{ctx: ctx, sse: sse, logger: logger, blocks: map[int64]*toolUse{}}
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
				s.pending = append(s.pending, model.Event{Kind: model.Done, StopReason: stopReason(s.stop, s.ncalls > 0)})
				s.err = io.EOF
				s.sse.Close()
				continue
			}
			s.err = s.endErr()
			continue
		}
		if s.finished {
			continue
		}
		if err := s.absorb(s.sse.Current()); err != nil {
			s.err = err
			s.pending = nil
			s.sse.Close()
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

func (s *stream) emit(ev model.Event) { s.pending = append(s.pending, ev) }

// absorb turns one stream event into pending events.
func (s *stream) absorb(ev sdk.MessageStreamEventUnion) error {
	switch ev.Type {
	case "content_block_start":
		cb := ev.ContentBlock
		switch cb.Type {
		case "tool_use":
			if s.ncalls >= maxToolCalls {
				return httpfail.Protocol(httpfail.Reason(fmt.Sprintf("more than %d tool calls", maxToolCalls)))
			}
			s.ncalls++
			s.blocks[ev.Index] = &toolUse{id: cb.ID, name: cb.Name}
		case "text":
			if cb.Text != "" {
				s.emit(model.Event{Kind: model.TextDelta, Text: cb.Text})
			}
		case "thinking":
			if cb.Thinking != "" {
				s.emit(model.Event{Kind: model.ThinkingDelta, Text: cb.Thinking})
			}
		}
	case "content_block_delta":
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				s.emit(model.Event{Kind: model.TextDelta, Text: d.Text})
			}
		case "thinking_delta":
			if d.Thinking != "" {
				s.emit(model.Event{Kind: model.ThinkingDelta, Text: d.Thinking})
			}
		case "input_json_delta":
			b := s.blocks[ev.Index]
			if b == nil {
				return httpfail.Protocol(httpfail.Reason("input_json_delta outside a tool_use block"))
			}
			s.argBytes += len(d.PartialJSON)
			if s.argBytes > maxArgBytes {
				return httpfail.Protocol(httpfail.Reason(fmt.Sprintf("tool call arguments exceed %d bytes", maxArgBytes)))
			}
			b.input.WriteString(d.PartialJSON)
		}
	case "content_block_stop":
		b := s.blocks[ev.Index]
		if b == nil {
			return nil
		}
		delete(s.blocks, ev.Index)
		args := strings.TrimSpace(b.input.String())
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) || args[0] != '{' {
			return httpfail.Protocol(httpfail.Reason("tool_use input is not a JSON object"))
		}
		if b.id == "" || b.name == "" {
			return httpfail.Protocol(httpfail.Reason("tool_use block without id or name"))
		}
		s.emit(model.Event{Kind: model.ToolCallDone, Call: model.ToolCall{ID: b.id, Name: b.name, Arguments: json.RawMessage(args)}})
	case "message_delta":
		if ev.Delta.StopReason != "" {
			s.stop = ev.Delta.StopReason
		}
	case "message_stop":
		if len(s.blocks) > 0 {
			return httpfail.Protocol(httpfail.Reason("message stopped inside a tool_use block"))
		}
		s.finished = true
		if s.body != nil {
			httpfail.Finishing(s.body, httpfail.FinishGrace)
		}
	}
	return nil
}

// endErr says why the event stream ended before message_stop.
func (s *stream) endErr() error {
	if s.closed.Load() {
		return httpfail.ErrClosed
	}
	if s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	// An "error" event: the server failed part-way (overloaded_error and
	// the like).
	e := httpfail.StreamEnded(s.sse.Err(), func(err error) bool {
		var aerr *sdk.Error
		return errors.As(err, &aerr)
	})
	s.logger.Debug("model stream ended", slog.String("provider", "anthropic"), slog.String("code", string(errcode.CodeOf(e))))
	return e
}

// stopReason maps stop_reason.
func stopReason(r sdk.StopReason, haveCalls bool) string {
	switch r {
	case sdk.StopReasonToolUse:
		return model.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return model.StopMaxTokens
	case sdk.StopReasonRefusal:
		return model.StopRefusal
	}
	if haveCalls {
		return model.StopToolUse
	}
	return model.StopEndTurn
}
