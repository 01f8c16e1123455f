package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/store"
)

// appendEvent gives an event the session's next seq, writes it with write
// (nil: a plain append) and only once it has committed publishes it to
// followers: every event is durable before anyone sees it.
func (e *Engine) appendEvent(ctx context.Context, s *session, taskID, typ string, body any,
	write func(context.Context, store.Event) error) (store.Event, error) {
	raw, err := marshalBody(body)
	if err != nil {
		return store.Event{}, errcode.Wrap(errcode.Internal, "an event could not be encoded", err)
	}
	// A cancelled request or task must not stop the log from recording
	// how it ended.
	wctx := context.WithoutCancel(ctx)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err := e.loadSeqLocked(wctx, s); err != nil {
		return store.Event{}, err
	}
	ev := store.Event{SessionID: s.id, Seq: s.nextSeq, TaskID: taskID, Type: typ, Body: raw, At: e.clock.Now()}
	if write == nil {
		write = func(ctx context.Context, ev store.Event) error { return e.store.AppendEvent(ctx, ev, nil) }
	}
	if err := write(wctx, ev); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// The session was deleted underneath.
			return store.Event{}, errNoSession
		}
		return store.Event{}, errcode.Wrap(errcode.StoreFailed, "the runtime could not write its log", err)
	}
	s.nextSeq++
	s.tail = append(s.tail, ev)
	s.tailBytes += len(ev.Body)
	// Keep at most tailMax events and tailMaxBytes of bodies; followers
	// that fall further behind read from the store.
	drop := 0
	for len(s.tail)-drop > 1 && (len(s.tail)-drop > tailMax || s.tailBytes > tailMaxBytes) {
		s.tailBytes -= len(s.tail[drop].Body)
		drop++
	}
	if drop > 0 {
		s.tail = append(s.tail[:0:0], s.tail[drop:]...)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return ev, nil
}

func marshalBody(body any) (json.RawMessage, error) {
	switch b := body.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		if len(b) == 0 {
			return json.RawMessage(`{}`), nil
		}
		return b, nil
	}
	return json.Marshal(body)
}

func (e *Engine) loadSeqLocked(ctx context.Context, s *session) error {
	if s.nextSeq != 0 {
		return nil
	}
	last, err := e.store.LastSeq(ctx, s.id)
	if err != nil {
		return errcode.Wrap(errcode.StoreFailed, "the runtime could not read its log", err)
	}
	s.nextSeq = last + 1
	return nil
}

// Follower reads a session's log in order as it grows. It holds the
// session in memory until Close. One goroutine at a time may use it.
type Follower struct {
	e     *Engine
	s     *session
	after int64
	buf   []store.Event
}

// Follow returns a Follower positioned after seq (0: from the start). The
// caller has checked that the session may be read.
func (e *Engine) Follow(ctx context.Context, sessionID string, after int64) (*Follower, error) {
	// A session in memory exists: a deleted one is dropped from memory
	// as its row goes. Following the prompt just submitted (every ACP
	// prompt) then costs no store read.
	e.mu.Lock()
	if s := e.sessions[sessionID]; s != nil && !s.gone {
		s = e.acquireLocked(s.id, s.owner)
		e.mu.Unlock()
		return &Follower{e: e, s: s, after: after}, nil
	}
	e.mu.Unlock()
	row, err := e.store.Session(ctx, sessionID)
	if err != nil {
		return nil, e.storeErr(err)
	}
	return &Follower{e: e, s: e.acquire(row), after: after}, nil
}

// Close releases the session.
func (f *Follower) Close() {
	if f.s != nil {
		f.e.release(f.s)
		f.s = nil
	}
}

// Next returns the next event. It blocks until one is written, ctx ends
// (ctx's error) or done is closed and no further event is there (io.EOF).
func (f *Follower) Next(ctx context.Context, done <-chan struct{}) (store.Event, error) {
	for {
		if len(f.buf) > 0 {
			ev := f.buf[0]
			f.buf = f.buf[1:]
			f.after = ev.Seq
			return ev, nil
		}
		s := f.s
		s.logMu.Lock()
		if err := f.e.loadSeqLocked(ctx, s); err != nil {
			s.logMu.Unlock()
			return store.Event{}, err
		}
		if f.after+1 < s.nextSeq {
			if n := len(s.tail); n > 0 && s.tail[0].Seq <= f.after+1 {
				ev := s.tail[f.after+1-s.tail[0].Seq]
				s.logMu.Unlock()
				f.after = ev.Seq
				return ev, nil
			}
			s.logMu.Unlock()
			// Too far behind the tail: read a page from the store.
			evs, err := f.e.store.Events(ctx, s.id, f.after, replayBatch)
			if err != nil {
				return store.Event{}, errcode.Wrap(errcode.StoreFailed, "the runtime could not read its log", err)
			}
			f.buf = evs
			if len(evs) == 0 {
				return store.Event{}, errcode.New(errcode.StoreFailed, "the runtime's log has a gap")
			}
			continue
		}
		changed := s.changed
		s.logMu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		case <-done:
			// One more look: the last events may have landed with done.
			s.logMu.Lock()
			more := f.after+1 < s.nextSeq
			s.logMu.Unlock()
			if !more {
				return store.Event{}, io.EOF
			}
		}
	}
}

// replayBatch is the page size of log reads (spec §2.5: batches of 500).
const replayBatch = 500

// History returns the range of the session's log a load replays: events
// with after < seq <= last cover the last ReplayTurns turns.
func (e *Engine) History(ctx context.Context, sessionID string) (after, last int64, err error) {
	start, err := e.store.ReplayStart(ctx, sessionID, e.lim.ReplayTurns)
	if err != nil {
		return 0, 0, e.storeErr(err)
	}
	last, err = e.store.LastSeq(ctx, sessionID)
	if err != nil {
		return 0, 0, e.storeErr(err)
	}
	return start - 1, last, nil
}

// Events returns up to limit events of the session with seq > after.
func (e *Engine) Events(ctx context.Context, sessionID string, after int64, limit int) ([]store.Event, error) {
	evs, err := e.store.Events(ctx, sessionID, after, limit)
	if err != nil {
		return nil, e.storeErr(err)
	}
	return evs, nil
}
