package acp

import (
	"context"
	"errors"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"io"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// promptState is one session/prompt in progress on a connection.
type promptState struct {
	sessionID string
	// giveUp ends the prompt's wait for its task (the cancel wait passed).
	giveUp context.CancelFunc

	mu        sync.Mutex // guards the fields below
	cancelled bool
	timer     clock.Timer
}

// markCancelled records a session/cancel and starts the cancel wait; it
// reports whether this call was the first.
func (ps *promptState) markCancelled(c clock.Clock, wait time.Duration) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.cancelled {
		return false
	}
	ps.cancelled = true
	ps.timer = c.AfterFunc(wait, ps.giveUp)
	return true
}

func (ps *promptState) isCancelled() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.cancelled
}

func (ps *promptState) stop() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.timer != nil {
		ps.timer.Stop()
	}
}

func (cn *conn) addPrompt(ps *promptState) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.prompts[ps.sessionID] = append(cn.prompts[ps.sessionID], ps)
}

func (cn *conn) removePrompt(ps *promptState) {
	ps.stop()
	cn.mu.Lock()
	defer cn.mu.Unlock()
	list := cn.prompts[ps.sessionID]
	for i, x := range list {
		if x == ps {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(cn.prompts, ps.sessionID)
	} else {
		cn.prompts[ps.sessionID] = list
	}
}

// prompt queues a prompt, streams its task's updates to this connection
// and answers when the task ends (spec §2.6, §2.7). If the connection
// goes away the answer is dropped and the task runs on.
func (cn *conn) prompt(ctx context.Context, p params) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	raw, ok := p["prompt"]
	if !ok {
		return nil, errcode.New(errcode.InvalidParams, "prompt is required")
	}
	pr, err := parsePrompt(raw)
	if err != nil {
		return nil, err
	}
	wctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	ps := &promptState{sessionID: id, giveUp: giveUp}
	cn.addPrompt(ps)
	defer cn.removePrompt(ps)

	pr.Cancelled = ps.isCancelled // a cancel during submission cancels the task at once
	turn, err := cn.a.e.Submit(ctx, cn.caller, id, pr)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{metaKey: map[string]string{"taskId": turn.TaskID()}}
	cancelled := sdk.PromptResponse{StopReason: sdk.StopReasonCancelled, Meta: meta}

	f, err := cn.a.e.Follow(ctx, id, turn.QueuedSeq())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := newMapper(false, cn.caller.Kind)
	for {
		ev, err := f.Next(wctx, turn.Done())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			switch {
			case ctx.Err() != nil && cn.base.Err() != nil:
				// The connection is over: nobody to answer; the task goes on.
				return nil, ctx.Err()
			case ctx.Err() != nil:
				// $/cancel_request for this prompt: cancel like session/cancel.
				cn.a.e.CancelSession(context.WithoutCancel(ctx), id, "client")
				return cancelled, nil
			case wctx.Err() != nil:
				// Cancelled, and the task did not stop within the cancel wait.
				return cancelled, nil
			}
			return nil, err
		}
		if ev.TaskID != turn.TaskID() {
			continue
		}
		for _, u := range m.updates(ev) {
			if err := cn.notify(ctx, id, u); err != nil {
				return nil, errcode.Wrap(errcode.Internal, "the connection ended", err)
			}
		}
		if engine.IsTerminal(ev.Type) {
			break
		}
	}
	<-turn.Done()
	stop, err := turn.Result()
	if err != nil {
		return nil, err
	}
	return sdk.PromptResponse{StopReason: sdk.StopReason(stop), Meta: meta}, nil
}

// gone reports whether the peer has disconnected.
func (cn *conn) gone() bool {
	select {
	case <-cn.sdk.Done():
		return true
	default:
		return false
	}
}

// cancel is the session/cancel notification (spec §2.8): it acts only
// when this connection has a prompt in progress on the session, and then
// cancels every unfinished task of the session. The prompts answer
// cancelled once their task stops, or after the cancel wait.
func (cn *conn) cancel(ctx context.Context, p params) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	defer cn.a.cancels.Add(1)
	cn.mu.Lock()
	list := append([]*promptState(nil), cn.prompts[id]...)
	cn.mu.Unlock()
	if len(list) == 0 || faultinject.Enabled && faultinject.Active(faultinject.CancelIgnored) {
		return nil, nil
	}
	for _, ps := range list {
		ps.markCancelled(cn.a.clock, cn.a.cancelWait)
	}
	cn.a.e.CancelSession(context.WithoutCancel(ctx), id, "client")
	return nil, nil
}
