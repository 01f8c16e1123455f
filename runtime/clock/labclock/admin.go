package labclock

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// AdminMethods are the clock.* methods over o, the clock serve runs on.
// Both exist in every build; a release build's clock.advance answers
// ErrRealClock.
func AdminMethods(o *Owner) []admin.Method {
	return []admin.Method{
		{Name: "clock.advance", Perm: admin.Owner, Summary: "advance the virtual clock (builds with the lab's clock only)",
			Handle: func(ctx context.Context, c *admin.Call) (any, error) { return clockAdvance(o, c) }},
		{Name: "clock.show", Perm: admin.Owner, Summary: "the runtime's clock: kind, time and offset",
			Handle: func(ctx context.Context, c *admin.Call) (any, error) { return clockShow(o, c) }},
	}
}

// CtlVerbs are the `agentosd ctl clock …` verbs.
func CtlVerbs() []admin.Verb {
	return []admin.Verb{
		{Group: "clock", Name: "show", Method: "clock.show", Summary: "show the runtime's clock: virtual (the lab's build) or real", Text: printInfo},
		{Group: "clock", Name: "advance", Method: "clock.advance", Args: "DURATION", Summary: "advance the virtual clock (e.g. 5m); a release build refuses", Params: advanceParams, Text: printInfo},
	}
}

// AdvanceParams are clock.advance's params.
type AdvanceParams struct {
	// Ms is how far to advance, in milliseconds.
	Ms int64 `json:"ms"`
}

func clockShow(o *Owner, c *admin.Call) (any, error) {
	if err := c.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	return o.Info(), nil
}

func clockAdvance(o *Owner, c *admin.Call) (any, error) {
	var p AdvanceParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.Ms <= 0 || p.Ms > MaxAdvance.Milliseconds() {
		if !Enabled {
			return nil, ErrRealClock
		}
		return nil, errcode.Newf(errcode.InvalidParams, `"ms" must be more than 0 and at most %d`, MaxAdvance.Milliseconds())
	}
	return o.Advance(time.Duration(p.Ms) * time.Millisecond)
}

func advanceParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 1 {
		return nil, admin.Usagef("want exactly one DURATION (e.g. 5m, 90s)")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d < time.Millisecond || d > MaxAdvance {
		return nil, admin.Usagef("DURATION: want a Go duration from 1ms to %s (e.g. 5m, 90s), not %q", MaxAdvance, args[0])
	}
	return AdvanceParams{Ms: d.Milliseconds()}, nil
}

func printInfo(w io.Writer, raw json.RawMessage) error {
	var in Info
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	now := time.UnixMilli(in.NowMs).UTC().Format(time.RFC3339Nano)
	if in.Kind != KindVirtual {
		_, err := fmt.Fprintf(w, "clock: %s (this build has the real clock only), now %s\n", in.Kind, now)
		return err
	}
	_, err := fmt.Fprintf(w, "clock: virtual, now %s, %s ahead of the real clock\n", now, time.Duration(in.OffsetMs)*time.Millisecond)
	return err
}
