package acptestclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// WaitClockOut is wait_clock's result.
type WaitClockOut struct {
	// Moved says the runtime's clock moved by the op's ms in time.
	Moved bool `json:"moved"`
	// MovedMs is how far it moved from the reference.
	MovedMs int64 `json:"movedMs"`
	// Kind is the runtime's clock: virtual (the lab advances it) or real.
	Kind string `json:"kind"`
	Outcome
}

// clockPoll is how often wait_clock reads the runtime's clock.
const clockPoll = 100 * time.Millisecond

// clockReadWait bounds the wait for one clock.show answer.
const clockReadWait = 5 * time.Second

// waitClock waits until the runtime's clock, read with clock.show on an
// admin connection, is op.Ms past the reference: the nowMs of the earlier
// raw result named op.Since (a clock.show sent before what the wait is
// about), or the first reading. The runtime's clock and not this app's is
// the measure, so a plan that waits out a runtime timer takes no real time
// when the lab advances a virtual clock, and really waits on a release
// build.
func (r *runner) waitClock(ctx context.Context, op *Op) (any, error) {
	rc, _, err := r.rawConnOf(op)
	if err != nil {
		return nil, err
	}
	out := &WaitClockOut{}
	var ref int64
	if op.Since != "" {
		v, ok := r.resultValue(op.Since, "response.result.nowMs")
		f, isNum := v.(float64)
		if !ok || !isNum {
			return out, planErrorf("since %q: no clock.show answer (response.result.nowMs) under that name", op.Since)
		}
		ref = int64(f)
	}
	timeout := time.Duration(op.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = time.Duration(op.Ms)*time.Millisecond + time.Minute
	}
	deadline := time.Now().Add(timeout)
	for n := 0; ; n++ {
		kind, now, err := r.clockShow(ctx, rc)
		if err != nil {
			return out, err
		}
		if n == 0 && op.Since == "" {
			ref = now
		}
		out.Kind, out.MovedMs = kind, now-ref
		if out.MovedMs >= int64(op.Ms) {
			out.Moved = true
			return out, nil
		}
		if time.Now().After(deadline) {
			return out, nil
		}
		t := time.NewTimer(clockPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return out, ctx.Err()
		}
	}
}

// clockShow asks the admin connection for the runtime's clock. Its ids
// are strings no plan's numeric ids collide with.
func (r *runner) clockShow(ctx context.Context, rc *rawConn) (kind string, nowMs int64, err error) {
	r.clockSeq++
	id := fmt.Sprintf("wait_clock-%d", r.clockSeq)
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "clock.show"})
	if _, err := rc.nc.Write(append(msg, '\n')); err != nil {
		return "", 0, fmt.Errorf("clock.show: %w", err)
	}
	deadline := time.Now().Add(clockReadWait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return "", 0, fmt.Errorf("clock.show: no answer in %s", clockReadWait)
		}
		line, closed := rc.next(ctx, left)
		if closed {
			return "", 0, fmt.Errorf("clock.show: the runtime closed the connection")
		}
		if line == nil {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result *struct {
				Kind  string `json:"kind"`
				NowMs int64  `json:"nowMs"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || !bytes.Equal(m.ID, []byte(`"`+id+`"`)) {
			continue
		}
		if m.Result == nil {
			return "", 0, fmt.Errorf("clock.show: %s", m.Error)
		}
		return m.Result.Kind, m.Result.NowMs, nil
	}
}
