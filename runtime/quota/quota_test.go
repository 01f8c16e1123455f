package quota_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/quota"
)

var (
	app     = engine.Caller{Kind: engine.CallerApp, UID: 10100, Package: "org.example.a"}
	other   = engine.Caller{Kind: engine.CallerApp, UID: 10101, Package: "org.example.b"}
	desktop = engine.Caller{Kind: engine.CallerDesktop, UID: 2000}
	self    = engine.Caller{Kind: engine.CallerSelf, UID: 1000}
)

// refusal checks an error against the exact refusal of spec §4.3.
func refusal(t *testing.T, err error, code errcode.Code, text string, details map[string]any) {
	t.Helper()
	var e *errcode.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want %s", err, code)
	}
	if e.Code != code || e.Text != text {
		t.Fatalf("err = %s %q, want %s %q", e.Code, e.Text, code, text)
	}
	if len(e.Details) != len(details) {
		t.Fatalf("details = %v, want %v", e.Details, details)
	}
	for k, v := range details {
		if e.Details[k] != v {
			t.Fatalf("details[%s] = %v, want %v", k, e.Details[k], v)
		}
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	const tooLarge = "The prompt is longer than 16000 characters."
	const busy = "This app already has a prompt in progress. Wait for it to finish."
	const hourly = "This app has used its 30 prompts for the hour."
	tests := []struct {
		name    string
		setup   func(q *quota.Quota, c *clocktest.Clock) // prior admissions
		caller  engine.Caller
		chars   int
		code    errcode.Code
		text    string
		details map[string]any
	}{
		{name: "at the length limit", caller: app, chars: 16000},
		{name: "over the length limit", caller: app, chars: 16001, code: errcode.InvalidParams, text: tooLarge,
			details: map[string]any{"reason": "too_large", "limit": 16000}},
		{name: "desktop is not limited", caller: desktop, chars: 100000},
		{name: "self is not limited", caller: self, chars: 100000},
		{name: "second prompt while one runs", caller: app, chars: 10,
			setup: func(q *quota.Quota, c *clocktest.Clock) { mustAdmit(t, q, app) },
			code:  errcode.QuotaExceeded, text: busy, details: map[string]any{"reason": "busy", "limit": 1}},
		{name: "other app is independent", caller: other, chars: 10,
			setup: func(q *quota.Quota, c *clocktest.Clock) { mustAdmit(t, q, app) }},
		{name: "length is checked before concurrency", caller: app, chars: 20000,
			setup: func(q *quota.Quota, c *clocktest.Clock) { mustAdmit(t, q, app) },
			code:  errcode.InvalidParams, text: tooLarge, details: map[string]any{"reason": "too_large", "limit": 16000}},
		{name: "31st prompt in the hour", caller: app, chars: 10,
			setup: func(q *quota.Quota, c *clocktest.Clock) { fill(t, q, c, 30, time.Minute) },
			code:  errcode.QuotaExceeded, text: hourly,
			// The first admission was 29 min ago: it leaves the window in 31 min.
			details: map[string]any{"reason": "hourly", "limit": 30, "retryAfterSeconds": 1860}},
		{name: "concurrency is checked before hourly", caller: app, chars: 10,
			setup: func(q *quota.Quota, c *clocktest.Clock) { fill(t, q, c, 30, time.Minute); mustAdmit2(q, c) },
			code:  errcode.QuotaExceeded, text: busy, details: map[string]any{"reason": "busy", "limit": 1}},
		{name: "window slides", caller: app, chars: 10,
			setup: func(q *quota.Quota, c *clocktest.Clock) { fill(t, q, c, 30, time.Minute); c.Advance(31 * time.Minute) }},
		{name: "retry after rounds up", caller: app, chars: 10,
			setup: func(q *quota.Quota, c *clocktest.Clock) {
				fill(t, q, c, 30, 0)
				c.Advance(time.Hour - 1500*time.Millisecond)
			},
			code: errcode.QuotaExceeded, text: hourly, details: map[string]any{"reason": "hourly", "limit": 30, "retryAfterSeconds": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := clocktest.New(time.Unix(1_700_000_000, 0))
			q := quota.New(&quota.Options{Clock: c})
			if tt.setup != nil {
				tt.setup(q, c)
			}
			done, err := q.Admit(context.Background(), tt.caller, tt.chars)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Admit: %v", err)
				}
				done("completed")
				return
			}
			refusal(t, err, tt.code, tt.text, tt.details)
		})
	}
}

func mustAdmit(t *testing.T, q *quota.Quota, c engine.Caller) func(string) {
	t.Helper()
	done, err := q.Admit(context.Background(), c, 1)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return done
}

// mustAdmit2 leaves a full window with one prompt in progress: the
// first admission of fill leaves the window, one more takes its place.
func mustAdmit2(q *quota.Quota, c *clocktest.Clock) {
	c.Advance(31 * time.Minute)
	if _, err := q.Admit(context.Background(), app, 1); err != nil {
		panic(err)
	}
}

// fill admits and finishes n prompts, step apart, ending at "now".
func fill(t *testing.T, q *quota.Quota, c *clocktest.Clock, n int, step time.Duration) {
	t.Helper()
	for i := 0; i < n; i++ {
		if i > 0 {
			c.Advance(step)
		}
		mustAdmit(t, q, app)("completed")
	}
}

func TestRefusedNotCountedAndUsage(t *testing.T) {
	t.Parallel()
	c := clocktest.New(time.Unix(1_700_000_000, 0))
	var mu sync.Mutex
	var reports []quota.PromptUsage
	q := quota.New(&quota.Options{Clock: c, OnUsage: func(u quota.PromptUsage) {
		mu.Lock()
		reports = append(reports, u)
		mu.Unlock()
	}})
	done := mustAdmit(t, q, app)
	if u := q.Usage(app.OwnerKey()); u != (quota.Usage{Active: 1, InWindow: 1, Total: 1}) {
		t.Fatalf("usage = %+v", u)
	}
	// Refusals are not counted.
	if _, err := q.Admit(context.Background(), app, 1); !errors.Is(err, errcode.QuotaExceeded) {
		t.Fatalf("second admit: %v", err)
	}
	if _, err := q.Admit(context.Background(), app, 99999); !errors.Is(err, errcode.InvalidParams) {
		t.Fatalf("long admit: %v", err)
	}
	done("completed")
	done("failed") // a second call is ignored
	if u := q.Usage(app.OwnerKey()); u != (quota.Usage{Active: 0, InWindow: 1, Total: 1}) {
		t.Fatalf("usage = %+v", u)
	}
	// A submission refused after admission gives everything back.
	mustAdmit(t, q, app)("refused")
	if u := q.Usage(app.OwnerKey()); u != (quota.Usage{Active: 0, InWindow: 1, Total: 1}) {
		t.Fatalf("usage after refused = %+v", u)
	}
	mustAdmit(t, q, app)("weird")
	mu.Lock()
	defer mu.Unlock()
	want := []quota.PromptUsage{{OwnerKey: "uid:10100", Outcome: "completed", PromptsInWindow: 1},
		{OwnerKey: "uid:10100", Outcome: "unknown", PromptsInWindow: 2}}
	if len(reports) != len(want) || reports[0] != want[0] || reports[1] != want[1] {
		t.Fatalf("reports = %+v, want %+v", reports, want)
	}
	// Revocation keeps counters (nothing to call); uninstall forgets.
	q.Forget(app.OwnerKey())
	if u := q.Usage(app.OwnerKey()); u != (quota.Usage{}) {
		t.Fatalf("usage after forget = %+v", u)
	}
}

func TestSetConfig(t *testing.T) {
	t.Parallel()
	q := quota.New(nil)
	q.SetConfig(quota.Config{MaxPerHour: 2})
	if got := q.Config(); got.MaxPerHour != 2 || got.MaxPromptChars != 16000 || got.MaxConcurrent != 1 || got.Window != time.Hour {
		t.Fatalf("config = %+v", got)
	}
	mustAdmit(t, q, app)("completed")
	mustAdmit(t, q, app)("completed")
	_, err := q.Admit(context.Background(), app, 1)
	refusal(t, err, errcode.QuotaExceeded, "This app has used its 2 prompts for the hour.",
		map[string]any{"reason": "hourly", "limit": 2, "retryAfterSeconds": 3600})
}

func BenchmarkAdmit(b *testing.B) {
	q := quota.New(nil)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		c := engine.Caller{Kind: engine.CallerApp, UID: 10000 + i%1000}
		done, err := q.Admit(ctx, c, 100)
		if err != nil {
			b.Fatal(err)
		}
		done("completed")
		if i%1000 == 999 {
			q = quota.New(nil)
		}
	}
}
