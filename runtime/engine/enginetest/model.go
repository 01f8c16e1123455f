package enginetest

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

// Reply is one scripted model answer.
type Reply struct {
	// Err fails the call before any event (a model error code).
	Err error
	// Events are streamed in order; a Done event is added when missing
	// and StreamErr is nil.
	Events []model.Event
	// Delay is waited before each event (the stream's Close or the call's
	// context ends the wait).
	Delay time.Duration
	// StreamErr is returned by Next after Events.
	StreamErr error
	// Hold keeps the stream open after Events until it is closed.
	Hold bool
}

// Text is a reply streaming the given text chunks, then end_turn.
func Text(chunks ...string) Reply {
	var r Reply
	for _, c := range chunks {
		r.Events = append(r.Events, model.Event{Kind: model.TextDelta, Text: c})
	}
	return r
}

// Calls is a reply asking for tool calls, then tool_use.
func Calls(calls ...model.ToolCall) Reply {
	var r Reply
	for _, c := range calls {
		r.Events = append(r.Events, model.Event{Kind: model.ToolCallDone, Call: c})
	}
	r.Events = append(r.Events, model.Event{Kind: model.Done, StopReason: model.StopToolUse})
	return r
}

// Call builds a tool call with JSON arguments.
func Call(id, name string, args any) model.ToolCall {
	b, _ := json.Marshal(args)
	return model.ToolCall{ID: id, Name: name, Arguments: b}
}

// Model is a model.Provider playing Replies in order; when they run out
// it plays Default (or, if Default has no events, "ok"). It records every
// request. Safe for concurrent use.
type Model struct {
	Default Reply
	// Forget, when set, keeps no requests (long benchmarks).
	Forget bool

	mu       sync.Mutex
	replies  []Reply
	requests []model.Request
}

var _ model.Provider = (*Model)(nil)

// Push appends replies to the script.
func (m *Model) Push(r ...Reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, r...)
}

// Requests returns copies of the requests received.
func (m *Model) Requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.Request(nil), m.requests...)
}

// Stream implements model.Provider.
func (m *Model) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	m.mu.Lock()
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	if !m.Forget {
		m.requests = append(m.requests, cp)
	}
	var r Reply
	if len(m.replies) > 0 {
		r, m.replies = m.replies[0], m.replies[1:]
	} else {
		r = m.Default
		if len(r.Events) == 0 && r.Err == nil && r.StreamErr == nil && !r.Hold {
			r = Text("ok")
		}
	}
	m.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	evs := r.Events
	if r.StreamErr == nil && !r.Hold && (len(evs) == 0 || evs[len(evs)-1].Kind != model.Done) {
		evs = append(append([]model.Event(nil), evs...), model.Event{Kind: model.Done, StopReason: model.StopEndTurn})
	}
	return &stream{ctx: ctx, r: r, evs: evs, closed: make(chan struct{})}, nil
}

type stream struct {
	ctx    context.Context
	r      Reply
	evs    []model.Event
	i      int
	once   sync.Once
	closed chan struct{}
}

func (s *stream) wait(d time.Duration) error {
	if d <= 0 {
		select {
		case <-s.closed:
			return errcode.New(errcode.ModelStreamInterrupted, "stream closed")
		default:
			return nil
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.closed:
		return errcode.New(errcode.ModelStreamInterrupted, "stream closed")
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

func (s *stream) Next() (model.Event, error) {
	if s.i < len(s.evs) {
		if err := s.wait(s.r.Delay); err != nil {
			return model.Event{}, err
		}
		ev := s.evs[s.i]
		s.i++
		return ev, nil
	}
	if s.r.StreamErr != nil {
		return model.Event{}, s.r.StreamErr
	}
	if s.r.Hold {
		select {
		case <-s.closed:
			return model.Event{}, errcode.New(errcode.ModelStreamInterrupted, "stream closed")
		case <-s.ctx.Done():
			return model.Event{}, s.ctx.Err()
		}
	}
	return model.Event{}, io.EOF
}

func (s *stream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}
