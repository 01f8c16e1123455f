package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"
)

// run executes one task from start to its terminal event. The scheduler
// starts it in its own goroutine with the task's context.
func (e *Engine) run(ctx context.Context, t *task) {
	defer e.wg.Done()
	defer t.cancel(nil)
	stopDeadline := e.clock.AfterFunc(e.lim.ExecutionTimeout, func() { t.cancel(errExecutionTimeout) })
	defer stopDeadline.Stop()

	var out outcome
	if err := e.move(ctx, t, moveSpec{to: store.TaskRunning, event: EvTaskStarted}); err != nil {
		out = outcome{err: err}
	} else {
		e.log.Info("task started", "session", t.sess.id, "task", t.id)
		out = e.turn(ctx, t)
	}
	m := e.endMove(ctx, t, out)
	if err := e.move(ctx, t, m); err != nil && errors.Is(err, errIllegalMove) {
		e.log.Error("task end not applied", "task", t.id, "to", string(m.to))
	}
	attrs := []any{"session", t.sess.id, "task", t.id, "state", string(m.to)}
	if m.err != nil {
		attrs = append(attrs, "code", string(m.err.Code))
	}
	e.log.Info("task ended", attrs...)
}

// outcome is how a turn ended: a stop reason, or an error.
type outcome struct {
	stopReason string
	err        error
}

// endMove turns an outcome into the task's terminal move. A context that
// ended decides first: the execution deadline fails the task, a cancel or
// shutdown cancels it.
func (e *Engine) endMove(ctx context.Context, t *task, out outcome) moveSpec {
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errExecutionTimeout):
			ce := errcode.Newf(errcode.ExecutionTimeout, "The task ran longer than %s and was stopped.", e.lim.ExecutionTimeout)
			return moveSpec{to: store.TaskFailed, event: EvTaskFailed, body: TaskEndBody{Error: infoOf(ce)}, err: ce}
		case errors.Is(cause, errKeyRevoked):
			ce := keyRevoked()
			return moveSpec{to: store.TaskFailed, event: EvTaskFailed, body: TaskEndBody{Error: infoOf(ce)}, err: ce}
		}
		e.mu.Lock()
		by := t.cancelBy
		e.mu.Unlock()
		if by == "" {
			by = "shutdown"
		}
		return cancelledMove(by)
	}
	if out.err != nil {
		ce := errcode.From(out.err)
		return moveSpec{to: store.TaskFailed, event: EvTaskFailed, body: TaskEndBody{Error: infoOf(ce)}, err: ce}
	}
	return moveSpec{to: store.TaskCompleted, event: EvTaskCompleted, body: TaskEndBody{StopReason: out.stopReason},
		stopReason: out.stopReason}
}

func infoOf(e *errcode.Error) *errcode.Info {
	i := e.Info()
	return &i
}

// turn is the loop model <-> tools of one task.
func (e *Engine) turn(ctx context.Context, t *task) outcome {
	row, err := e.store.Session(ctx, t.sess.id)
	if err != nil {
		return outcome{err: e.storeErr(err)}
	}
	cfg, provider, revoked, ok := e.lease()
	if !ok {
		return outcome{err: errcode.New(errcode.ModelNotConfigured, NoModelText)}
	}
	if revoked != nil {
		defer e.stopOnRevoke(t, revoked)()
	}
	view := SessionView{SessionID: row.ID, TaskID: t.id, Caller: t.caller, Scope: scopeOf(row), Mode: modeOf(row)}
	defs, display, section := e.prepareTools(ctx, view)
	msgs, err := e.conversation(ctx, t)
	if err != nil {
		return outcome{err: err}
	}
	system := e.base
	if section != "" {
		system += "\n\n" + section
	}
	req := &model.Request{Model: pickModel(cfg, row.ModelID), System: system, Messages: msgs, Tools: defs}
	usedIDs := map[string]bool{}
	for rounds := 0; ; {
		if ctx.Err() != nil {
			return outcome{err: ctx.Err()}
		}
		res, err := e.stream(ctx, t, provider, req)
		if err != nil {
			return outcome{err: err}
		}
		if len(res.calls) == 0 {
			return outcome{stopReason: stopReasonOf(res.stop)}
		}
		if rounds == e.lim.MaxToolRounds {
			if _, err := e.appendEvent(ctx, t.sess, t.id, EvToolRoundLimit, map[string]int{"rounds": rounds}, nil); err != nil {
				return outcome{err: err}
			}
			return outcome{stopReason: StopMaxTurnRequests}
		}
		rounds++
		calls := uniqueCallIDs(res.calls, usedIDs)
		for _, c := range calls {
			body := ToolCallBody{ToolCallID: c.ID, Name: c.Name, Arguments: argumentsOf(c.Arguments)}
			if d, ok := display[c.Name]; ok {
				body.Display = &d
			}
			mark := &store.ToolCallMark{TaskID: t.id, ID: c.ID, Name: c.Name}
			if _, err := e.appendEvent(ctx, t.sess, t.id, EvToolCall, body, e.markWriter(mark)); err != nil {
				return outcome{err: err}
			}
		}
		req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, Text: res.text, ToolCalls: calls})
		for _, c := range calls {
			msg, err := e.callTool(ctx, t, view, c)
			if err != nil {
				return outcome{err: err}
			}
			req.Messages = append(req.Messages, msg)
		}
	}
}

// lease asks the model source for the turn's model, with the channel
// that says it was withdrawn when the source can tell.
func (e *Engine) lease() (model.Config, model.Provider, <-chan struct{}, bool) {
	if l, ok := e.models.(ModelLeaser); ok {
		return l.Lease()
	}
	cfg, p, ok := e.models.Current()
	return cfg, p, nil, ok
}

// stopOnRevoke ends t's context with errKeyRevoked once revoked closes;
// the returned func stops the watch (the turn is over) and waits for it.
func (e *Engine) stopOnRevoke(t *task, revoked <-chan struct{}) func() {
	over := make(chan struct{})
	done := make(chan struct{})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(done)
		select {
		case <-revoked:
			t.cancel(errKeyRevoked)
		case <-over:
		}
	}()
	return func() { close(over); <-done }
}

func (e *Engine) markWriter(mark *store.ToolCallMark) func(context.Context, store.Event) error {
	return func(ctx context.Context, ev store.Event) error { return e.store.AppendEvent(ctx, ev, mark) }
}

// pickModel is the session's chosen model when it is still offered, else
// the configured one.
func pickModel(cfg model.Config, chosen string) string {
	for _, c := range cfg.Choices {
		if c == chosen && chosen != "" {
			return chosen
		}
	}
	return cfg.Model
}

func stopReasonOf(s string) string {
	switch s {
	case model.StopMaxTokens:
		return StopMaxTokens
	case model.StopRefusal:
		return StopRefusal
	}
	return StopEndTurn
}

// argumentsOf keeps a call's arguments as JSON for the log: a value that
// is not valid JSON is logged as a JSON string.
func argumentsOf(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

// uniqueCallIDs gives every call of the task a distinct, non-empty id
// (providers may reuse ids across rounds).
func uniqueCallIDs(calls []model.ToolCall, used map[string]bool) []model.ToolCall {
	out := make([]model.ToolCall, len(calls))
	for i, c := range calls {
		id := c.ID
		if id == "" {
			id = "call_" + strconv.Itoa(len(used)+1)
		}
		for n := 2; used[id]; n++ {
			id = c.ID + "_" + strconv.Itoa(n)
		}
		used[id] = true
		c.ID = id
		out[i] = c
	}
	return out
}

// prepareTools asks the tool layer for the turn's tools. A tool layer that
// fails or is slow does not fail the task: the model runs without tools.
func (e *Engine) prepareTools(ctx context.Context, view SessionView) ([]model.Tool, map[string]ToolDisplay, string) {
	pctx, cancel := clock.WithTimeout(ctx, e.clock, e.lim.ToolPrepareTimeout)
	defer cancel()
	defs, section, err := e.tools.ForSession(pctx, view)
	if err != nil {
		e.log.Warn("tools unavailable for this turn", "session", view.SessionID, "task", view.TaskID, "code", errcode.CodeOf(err))
		return nil, nil, ""
	}
	tools := make([]model.Tool, len(defs))
	display := make(map[string]ToolDisplay, len(defs))
	for i, d := range defs {
		tools[i] = d.Tool
		display[d.Name] = d.Display
	}
	return tools, display, section
}

// modelResult is one model call's answer.
type modelResult struct {
	text  string
	calls []model.ToolCall
	stop  string
}

type streamItem struct {
	ev  model.Event
	err error
}

// stream makes one model call and logs its text as it arrives, coalesced
// (spec §2.6: 32 ms window, 8,192 chars). The provider's stream is read
// in a helper goroutine so a pending window can close while the model is
// silent; the stream is closed when ctx ends, which ends the helper.
func (e *Engine) stream(ctx context.Context, t *task, p model.Provider, req *model.Request) (modelResult, error) {
	st, err := p.Stream(ctx, req)
	if err != nil {
		return modelResult{}, modelErr(ctx, err)
	}
	defer st.Close()
	stopClose := context.AfterFunc(ctx, func() { st.Close() })
	defer stopClose()
	items := make(chan streamItem, 32)
	quit := make(chan struct{})
	defer close(quit)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			ev, err := st.Next()
			select {
			case items <- streamItem{ev, err}:
			case <-quit:
				return
			}
			if err != nil || ev.Kind == model.Done {
				return
			}
		}
	}()

	co := coalescer{window: e.lim.CoalesceWindow, max: e.lim.CoalesceMaxChars}
	var (
		res   modelResult
		timer *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	write := func(fl []flushed) error {
		for _, f := range fl {
			typ := EvMessageDelta
			if f.thought {
				typ = EvThoughtDelta
			}
			if _, err := e.appendEvent(ctx, t.sess, t.id, typ, TextBody{Text: f.text}, nil); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		var tick <-chan time.Time
		if d, ok := co.deadline(); ok {
			wait := time.Until(d)
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tick = timer.C
		}
		select {
		case <-tick:
			if err := write(co.flush(time.Now())); err != nil {
				return res, err
			}
		case it := <-items:
			if timer != nil {
				timer.Stop()
			}
			if it.err != nil {
				if err := write(co.flush(time.Now())); err != nil {
					return res, err
				}
				if errors.Is(it.err, io.EOF) && ctx.Err() == nil {
					return res, errcode.New(errcode.ModelStreamInterrupted, "The model's answer ended before it was complete.")
				}
				return res, modelErr(ctx, it.err)
			}
			switch it.ev.Kind {
			case model.TextDelta, model.ThinkingDelta:
				thought := it.ev.Kind == model.ThinkingDelta
				if !thought {
					res.text += it.ev.Text
				}
				if err := write(co.add(time.Now(), thought, it.ev.Text)); err != nil {
					return res, err
				}
			case model.ToolCallDone:
				if err := write(co.flush(time.Now())); err != nil {
					return res, err
				}
				res.calls = append(res.calls, it.ev.Call)
			case model.Done:
				if err := write(co.flush(time.Now())); err != nil {
					return res, err
				}
				res.stop = it.ev.StopReason
				return res, nil
			}
		}
	}
}

// modelErr maps a provider failure: the task's own context ending wins,
// a model error code passes through, anything else is model_protocol.
func modelErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return ce
	}
	return errcode.Wrap(errcode.ModelProtocol, "The model's answer could not be read.", err)
}

// taskEvents is the ToolEvents of one tool call. Once the call is over it
// refuses further events, so a tool layer that returns late cannot write
// into a finished task.
type taskEvents struct {
	e      *Engine
	t      *task
	callID string

	mu         sync.Mutex // guards the fields below; held across one write
	closed     bool
	dispatched bool
}

var _ ToolEvents = (*taskEvents)(nil)

var errEventsClosed = errors.New("engine: the tool call is over")

// Emit implements ToolEvents. Only consent.*, hook.*, tool.dispatched and
// tool.progress events are accepted from the tool layer.
func (te *taskEvents) Emit(ctx context.Context, typ string, body any) error {
	if !toolEventAllowed(typ) {
		return fmt.Errorf("engine: tool layer may not emit %q", typ)
	}
	raw, err := marshalBody(body)
	if err != nil {
		return fmt.Errorf("engine: emit %s: %w", typ, err)
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	if te.closed {
		return errEventsClosed
	}
	var write func(context.Context, store.Event) error
	if typ == EvToolDispatched {
		var ref ToolRefBody
		if json.Unmarshal(raw, &ref) != nil || ref.ToolCallID == "" {
			ref.ToolCallID = te.callID
		}
		write = te.e.markWriter(&store.ToolCallMark{TaskID: te.t.id, ID: ref.ToolCallID, Dispatched: true})
	}
	if _, err := te.e.appendEvent(ctx, te.t.sess, te.t.id, typ, raw, write); err != nil {
		return err
	}
	if typ == EvToolDispatched {
		te.dispatched = true
	}
	return nil
}

func toolEventAllowed(typ string) bool {
	switch {
	case typ == EvToolDispatched, typ == eventToolProgress:
		return true
	case strings.HasPrefix(typ, eventPrefixConsent) && len(typ) > len(eventPrefixConsent):
		return true
	case strings.HasPrefix(typ, eventPrefixHook) && len(typ) > len(eventPrefixHook):
		return true
	}
	return false
}

// close ends the call's events and reports whether it was dispatched.
func (te *taskEvents) close() bool {
	te.mu.Lock()
	defer te.mu.Unlock()
	te.closed = true
	return te.dispatched
}

type callResult struct {
	r   ToolResult
	err error
}

// callTool runs one tool call through the Tools seam and logs its result
// and settlement. A cancelled task gives the call CancelGrace to return;
// after that its result is unknown. It returns the tool message for the
// model, or an error when the task cannot go on.
func (e *Engine) callTool(ctx context.Context, t *task, view SessionView, c model.ToolCall) (model.Message, error) {
	te := &taskEvents{e: e, t: t, callID: c.ID}
	req := ToolCallRequest{Session: view, ToolCallID: c.ID, Name: c.Name, Arguments: c.Arguments}
	resCh := make(chan callResult, 1)
	var res callResult
	if ctx.Err() != nil {
		res.err = ctx.Err()
	} else {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			r, err := e.tools.Call(ctx, req, te)
			resCh <- callResult{r, err}
		}()
		select {
		case res = <-resCh:
		case <-ctx.Done():
			grace := make(chan struct{})
			stop := e.clock.AfterFunc(e.lim.CancelGrace, func() { close(grace) })
			select {
			case res = <-resCh:
			case <-grace:
				res.err = ctx.Err()
			}
			stop.Stop()
		}
	}
	dispatched := te.close()
	r := res.r
	if res.err != nil {
		if ctx.Err() == nil {
			return model.Message{}, errcode.From(res.err)
		}
		// The task was cancelled and the call did not answer.
		if dispatched {
			r = ToolResult{Code: string(errcode.ToolResultUnknown), IsError: true, Outcome: OutcomeUnknown,
				Text: errcode.ToolText(errcode.ToolResultUnknown, "Tool call was cancelled after dispatch.")}
		} else {
			r = ToolResult{Code: string(errcode.ToolDenied), IsError: true, Outcome: OutcomeCancelled,
				Text: errcode.ToolText(errcode.ToolDenied, "The task was cancelled before the tool call ran.")}
		}
	}
	text, length := capResult(r.Text, e.lim.MaxResultChars)
	if _, err := e.appendEvent(ctx, t.sess, t.id, EvToolResult,
		ToolResultBody{ToolCallID: c.ID, Text: text, IsError: r.IsError, Code: r.Code, Length: length}, nil); err != nil {
		return model.Message{}, err
	}
	settled := ToolSettledBody{ToolCallID: c.ID, Outcome: outcomeOf(r, dispatched), IsError: r.IsError, Details: r.Details}
	if r.IsError && r.Code != "" {
		settled.Error = &errcode.Info{Code: errcode.Parse(r.Code), Message: r.Text, Retryable: errcode.Parse(r.Code).Retryable()}
	}
	mark := &store.ToolCallMark{TaskID: t.id, ID: c.ID, Outcome: settled.Outcome}
	if _, err := e.appendEvent(ctx, t.sess, t.id, EvToolSettled, settled, e.markWriter(mark)); err != nil {
		return model.Message{}, err
	}
	return model.Message{Role: model.RoleTool, ToolCallID: c.ID, Text: text, IsError: r.IsError}, nil
}

// outcomeOf fills in a tool.settled outcome the tool layer left empty.
func outcomeOf(r ToolResult, dispatched bool) string {
	if r.Outcome != "" {
		return r.Outcome
	}
	switch errcode.Code(r.Code) {
	case errcode.ToolNotInCatalog, errcode.ToolDenied, errcode.ToolBlocked:
		return OutcomeRejected
	case errcode.ToolUnavailable:
		return OutcomeNotDispatched
	case errcode.ToolResultUnknown, errcode.ToolTimeout:
		return OutcomeUnknown
	}
	if !dispatched && r.IsError {
		return OutcomeNotDispatched
	}
	return OutcomeCompleted
}

// capResult caps a tool result for the model (spec §3.3): over max chars
// it is cut and the truncation line appended. It also returns the
// original length.
func capResult(text string, max int) (string, int) {
	n := chars.Len(text)
	if n <= max {
		return text, n
	}
	return chars.Cut(text, max) + fmt.Sprintf("\n[agentos:tool_result_too_large] Result truncated from %d to %d characters.", n, max), n
}
