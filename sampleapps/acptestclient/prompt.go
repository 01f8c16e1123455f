package acptestclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
)

// PromptOut is a prompt's result: how it ended and what it streamed.
type PromptOut struct {
	SessionID  string `json:"sessionId"`
	StopReason string `json:"stopReason"`
	TaskID     string `json:"taskId"`
	// Text is the agent's text, concatenated.
	Text string `json:"text"`
	// ToolCalls are the calls of the turn in the order they started,
	// each with its final state and every status it went through.
	ToolCalls []ToolCallOut `json:"toolCalls"`
	// Events counts the events streamed.
	Events int `json:"events"`
	// Stream is the text stream's figures (spec §10.2's metrics).
	Stream StreamOut `json:"stream"`
	// BusyRetries counts the sends refused with quota busy before this
	// one was admitted (busyRetryMs).
	BusyRetries int `json:"busyRetries,omitempty"`
	// Runs are the prompts of times > 1, in order.
	Runs []*PromptOut `json:"runs,omitempty"`
	// Background says the prompt was started in the background; Pending
	// that it had not ended when the result was read (no await).
	Background bool `json:"background,omitempty"`
	Pending    bool `json:"pending,omitempty"`
	Outcome
}

// StreamOut measures a prompt's text stream as the client saw it: the
// updates (the runtime coalesces model chunks, spec §2.6), their sizes,
// a digest of the whole text (so a lost, doubled or reordered chunk
// shows without shipping megabytes back), and timings.
type StreamOut struct {
	// Chunks counts the text updates; Chars the text's characters.
	Chunks        int `json:"chunks"`
	Chars         int `json:"chars"`
	MaxChunkChars int `json:"maxChunkChars"`
	// SHA256 is the hex digest of the text's UTF-8 bytes.
	SHA256 string `json:"sha256"`
	// FirstChunkMs is from sending the prompt to its first text.
	FirstChunkMs int64 `json:"firstChunkMs"`
	// GapP50Ms and GapP99Ms are percentiles of the time between two
	// text updates: the per-chunk latency a reader of the stream sees.
	GapP50Ms float64 `json:"gapP50Ms"`
	GapP99Ms float64 `json:"gapP99Ms"`
	// ChunksPerSec and CharsPerSec are over the first to the last text.
	ChunksPerSec float64 `json:"chunksPerSec"`
	CharsPerSec  float64 `json:"charsPerSec"`
	// CancelToStopMs is from sending session/cancel to the turn's end
	// (cancelAfterMs only; absent when no cancel was sent).
	CancelToStopMs *float64 `json:"cancelToStopMs,omitempty"`
}

// streamMeter folds text updates into a StreamOut.
type streamMeter struct {
	start, first, last time.Time
	gaps               []time.Duration
	hash               hash.Hash
	out                StreamOut
}

func newStreamMeter(start time.Time) *streamMeter {
	return &streamMeter{start: start, hash: sha256.New()}
}

func (m *streamMeter) text(now time.Time, s string) {
	n := utf8.RuneCountInString(s)
	if m.out.Chunks == 0 {
		m.first = now
		m.out.FirstChunkMs = now.Sub(m.start).Milliseconds()
	} else {
		m.gaps = append(m.gaps, now.Sub(m.last))
	}
	m.last = now
	m.out.Chunks++
	m.out.Chars += n
	m.out.MaxChunkChars = max(m.out.MaxChunkChars, n)
	m.hash.Write([]byte(s))
}

func (m *streamMeter) result() StreamOut {
	out := m.out
	out.SHA256 = hex.EncodeToString(m.hash.Sum(nil))
	if len(m.gaps) > 0 {
		slices.Sort(m.gaps)
		out.GapP50Ms = percentileMs(m.gaps, 50)
		out.GapP99Ms = percentileMs(m.gaps, 99)
	}
	if d := m.last.Sub(m.first).Seconds(); d > 0 {
		out.ChunksPerSec = round2(float64(out.Chunks-1) / d)
		out.CharsPerSec = round2(float64(out.Chars) / d)
	}
	return out
}

// percentileMs is the nearest-rank percentile p of sorted gaps, in ms.
func percentileMs(sorted []time.Duration, p int) float64 {
	i := (len(sorted)*p + 99) / 100
	i = min(max(i, 1), len(sorted))
	return round2(float64(sorted[i-1]) / float64(time.Millisecond))
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// ToolCallOut is one tool call of a turn.
type ToolCallOut struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	// Statuses are the statuses in the order the updates brought them,
	// without repeats.
	Statuses  []string `json:"statuses"`
	Result    string   `json:"result"`
	Arguments string   `json:"arguments"`
	// Ref is "plugin:tool" when the call maps back to the session's
	// toolScope, else "".
	Ref string `json:"ref"`
}

func (r *runner) prompt(ctx context.Context, op *Op) (any, error) {
	s, err := r.session(op.Session)
	if err != nil {
		return nil, err
	}
	text := op.promptText()
	cancelAfter := time.Duration(op.CancelAfterMs) * time.Millisecond
	busyRetry := time.Duration(op.BusyRetryMs) * time.Millisecond
	if op.Background {
		b := &background{done: make(chan struct{}), changed: make(chan struct{}, 1)}
		r.bg[op.As] = b
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer close(b.done)
			start := time.Now()
			res, err := runPrompt(withProgress(ctx, b.progress), s, text, cancelAfter, busyRetry, op.DropText)
			res.Background = true
			res.setCommon(time.Since(start).Milliseconds(), errOut(err))
			b.res = res
		}()
		return &PromptOut{SessionID: s.ID(), ToolCalls: []ToolCallOut{}, Background: true, Pending: true}, nil
	}
	if op.Times <= 1 {
		return runPrompt(ctx, s, text, cancelAfter, busyRetry, op.DropText)
	}
	out := &PromptOut{SessionID: s.ID(), ToolCalls: []ToolCallOut{}}
	var last error
	for range op.Times {
		start := time.Now()
		res, err := runPrompt(ctx, s, text, cancelAfter, busyRetry, op.DropText)
		res.setCommon(time.Since(start).Milliseconds(), errOut(err))
		out.Runs = append(out.Runs, res)
		out.StopReason, out.TaskID, out.Text, out.Events, out.Stream = res.StopReason, res.TaskID, res.Text, res.Events, res.Stream
		last = err
	}
	// The op's own error is the last prompt's; each run has its own.
	return out, last
}

// busyPoll is how often a prompt refused with quota busy is sent again.
const busyPoll = 25 * time.Millisecond

// runPrompt sends one prompt and folds its stream; while the runtime
// refuses it with quota busy it sends it again for up to busyRetry.
func runPrompt(ctx context.Context, s *acpclient.Session, text string, cancelAfter, busyRetry time.Duration, dropText bool) (*PromptOut, error) {
	deadline := time.Now().Add(busyRetry)
	retries := 0
	for {
		out, err := promptOnce(ctx, s, text, cancelAfter, dropText)
		var e *acpclient.Error
		if !errors.As(err, &e) || e.AgentosCode != "quota_exceeded" || e.Reason != "busy" || time.Now().After(deadline) {
			out.BusyRetries = retries
			return out, err
		}
		retries++
		t := time.NewTimer(busyPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			out.BusyRetries = retries
			return out, err
		}
	}
}

// promptOnce sends one prompt and folds its stream.
func promptOnce(ctx context.Context, s *acpclient.Session, text string, cancelAfter time.Duration, dropText bool) (*PromptOut, error) {
	out := &PromptOut{SessionID: s.ID(), ToolCalls: []ToolCallOut{}}
	meter := newStreamMeter(time.Now())
	var cancelMu sync.Mutex
	var cancelAt time.Time
	defer func() {
		out.Stream = meter.result()
		cancelMu.Lock()
		if !cancelAt.IsZero() {
			ms := round2(float64(time.Since(cancelAt)) / float64(time.Millisecond))
			out.Stream.CancelToStopMs = &ms
		}
		cancelMu.Unlock()
		if dropText {
			out.Text = ""
		}
	}()
	if cancelAfter > 0 {
		t := time.AfterFunc(cancelAfter, func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			cancelMu.Lock()
			cancelAt = time.Now()
			cancelMu.Unlock()
			s.Cancel(cctx)
		})
		defer t.Stop()
	}
	index := map[string]int{}
	var sb strings.Builder
	for ev, err := range s.Prompt(ctx, text, acpclient.PromptOptions{}) {
		if err != nil {
			out.Text = sb.String()
			return out, err
		}
		out.Events++
		switch e := ev.(type) {
		case acpclient.Text:
			meter.text(time.Now(), e.Text)
			sb.WriteString(e.Text)
			if p := progressOf(ctx); p != nil {
				p(e.Text)
			}
		case acpclient.ToolCall:
			i, ok := index[e.ID]
			if !ok {
				i = len(out.ToolCalls)
				index[e.ID] = i
				out.ToolCalls = append(out.ToolCalls, ToolCallOut{ID: e.ID, Statuses: []string{}})
			}
			tc := &out.ToolCalls[i]
			tc.Tool, tc.Status, tc.Result, tc.Arguments = e.Tool, string(e.Status), e.ResultJSON, e.ArgumentsJSON
			tc.Ref = ""
			if e.Ref != nil {
				tc.Ref = e.Ref.String()
			}
			if n := len(tc.Statuses); n == 0 || tc.Statuses[n-1] != tc.Status {
				tc.Statuses = append(tc.Statuses, tc.Status)
			}
		case acpclient.Done:
			out.StopReason, out.TaskID = e.StopReason, e.TaskID
		}
	}
	out.Text = sb.String()
	return out, nil
}

func (r *runner) await(ctx context.Context, op *Op) (any, error) {
	b, ok := r.bg[op.Prompt]
	if !ok {
		return nil, planErrorf("no background prompt %q", op.Prompt)
	}
	d := time.Duration(op.TimeoutMs) * time.Millisecond
	if d == 0 {
		d = MaxWaitMs * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-b.done:
	case <-t.C:
		return nil, planErrorf("prompt %q still running after %s", op.Prompt, d)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.setResult(op.Prompt, b.res)
	if b.res.Error != nil {
		return b.res, &resultError{b.res.Error}
	}
	return b.res, nil
}

// resultError carries an awaited prompt's recorded error into its step.
type resultError struct{ e *ErrorOut }

func (e *resultError) Error() string { return e.e.Code + ": " + e.e.Message }

// progressKey carries a background prompt's text sink in its context.
type progressKey struct{}

func withProgress(ctx context.Context, f func(string)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func progressOf(ctx context.Context) func(string) {
	f, _ := ctx.Value(progressKey{}).(func(string))
	return f
}

// progress records text a background prompt streamed so far.
func (b *background) progress(chunk string) {
	b.mu.Lock()
	b.text.WriteString(chunk)
	b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// WaitTextOut is wait_text's result.
type WaitTextOut struct {
	// Seen: the background prompt streamed the text in time.
	Seen bool `json:"seen"`
	// Ended: the prompt ended before (Seen may still be true).
	Ended bool `json:"ended"`
	Outcome
}

// waitText waits until a background prompt has streamed text containing
// op.Text: proof that its task runs, without a fixed pause.
func (r *runner) waitText(ctx context.Context, op *Op) (any, error) {
	b, ok := r.bg[op.Prompt]
	if !ok {
		return nil, planErrorf("no background prompt %q", op.Prompt)
	}
	d := time.Duration(op.TimeoutMs) * time.Millisecond
	if d == 0 {
		d = 30 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		b.mu.Lock()
		seen := strings.Contains(b.text.String(), op.Text)
		b.mu.Unlock()
		if seen {
			return &WaitTextOut{Seen: true}, nil
		}
		select {
		case <-b.changed:
		case <-b.done:
			b.mu.Lock()
			seen := strings.Contains(b.text.String(), op.Text)
			b.mu.Unlock()
			return &WaitTextOut{Seen: seen, Ended: true}, nil
		case <-t.C:
			return &WaitTextOut{}, nil
		case <-ctx.Done():
			return &WaitTextOut{}, ctx.Err()
		}
	}
}
