package quota

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// Config are the limits of spec §4.3. A zero field takes the default shown.
type Config struct {
	MaxPromptChars int           // 16,000 (UTF-16 units)
	MaxConcurrent  int           // 1
	MaxPerHour     int           // 30
	Window         time.Duration // 1 h, sliding
}

func (c Config) withDefaults() Config {
	if c.MaxPromptChars <= 0 {
		c.MaxPromptChars = 16000
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 1
	}
	if c.MaxPerHour <= 0 {
		c.MaxPerHour = 30
	}
	if c.Window <= 0 {
		c.Window = time.Hour
	}
	return c
}

// PromptUsage is reported once per finished admitted prompt.
type PromptUsage struct {
	OwnerKey string
	// Outcome is the task's end: completed, cancelled, failed or unknown.
	Outcome string
	// PromptsInWindow counts the owner's admissions in the window now.
	PromptsInWindow int
}

// Options configure a Quota. The zero value works.
type Options struct {
	Config Config
	// Clock is the time of the sliding window; nil means the real clock.
	Clock clock.Clock
	// OnUsage, when set, is called (without locks held) once per finished
	// admitted prompt. It must not block.
	OnUsage func(PromptUsage)
	// Logger receives owner keys, reasons and counts; nil discards.
	Logger *slog.Logger
}

// Usage is one owner's counters.
type Usage struct {
	// Active is the number of admitted prompts whose task has not ended.
	Active int
	// InWindow is the number of admissions in the sliding window.
	InWindow int
	// Total is the number of admissions since the runtime started.
	Total int64
}

// Quota is the caller-quota Admission. Safe for concurrent use.
type Quota struct {
	clock   clock.Clock
	onUsage func(PromptUsage)
	log     *slog.Logger

	mu     sync.Mutex // guards the fields below
	cfg    Config
	owners map[string]*owner
}

// owner holds one ownerKey's counters.
type owner struct {
	active int
	// admitted holds admission times in the window, oldest first.
	admitted []time.Time
	total    int64
}

var _ engine.Admission = (*Quota)(nil)

// New returns a Quota.
func New(opts *Options) *Quota {
	var o Options
	if opts != nil {
		o = *opts
	}
	q := &Quota{clock: o.Clock, onUsage: o.OnUsage, log: o.Logger, cfg: o.Config.withDefaults(), owners: map[string]*owner{}}
	q.clock = clock.Or(q.clock)
	if q.onUsage == nil {
		q.onUsage = func(PromptUsage) {}
	}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	return q
}

// SetConfig replaces the limits (admin config overrides for tests);
// counters are kept.
func (q *Quota) SetConfig(c Config) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cfg = c.withDefaults()
}

// Config returns the limits in force.
func (q *Quota) Config() Config {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cfg
}

// Admit implements engine.Admission. Only APP callers are limited.
func (q *Quota) Admit(_ context.Context, c engine.Caller, chars int) (func(outcome string), error) {
	if c.Kind != engine.CallerApp {
		return func(string) {}, nil
	}
	key := c.OwnerKey()
	q.mu.Lock()
	cfg := q.cfg
	if chars > cfg.MaxPromptChars {
		q.mu.Unlock()
		q.log.Info("prompt refused", "owner", key, "reason", "too_large")
		return nil, errcode.Newf(errcode.InvalidParams, "The prompt is longer than %d characters.", cfg.MaxPromptChars).
			WithDetails(map[string]any{"reason": "too_large", "limit": cfg.MaxPromptChars})
	}
	now := q.clock.Now()
	o := q.owners[key]
	if o == nil {
		o = &owner{}
		q.owners[key] = o
	}
	o.prune(now, cfg.Window)
	if o.active >= cfg.MaxConcurrent && !(faultinject.Enabled && faultinject.Active(faultinject.BusyQuotaIgnored)) {
		q.mu.Unlock()
		q.log.Info("prompt refused", "owner", key, "reason", "busy")
		return nil, errcode.New(errcode.QuotaExceeded, "This app already has a prompt in progress. Wait for it to finish.").
			WithDetails(map[string]any{"reason": "busy", "limit": cfg.MaxConcurrent})
	}
	if len(o.admitted) >= cfg.MaxPerHour {
		// The oldest admission in the window frees a slot when it leaves it.
		wait := o.admitted[len(o.admitted)-cfg.MaxPerHour].Add(cfg.Window).Sub(now)
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		q.mu.Unlock()
		q.log.Info("prompt refused", "owner", key, "reason", "hourly")
		return nil, errcode.Newf(errcode.QuotaExceeded, "This app has used its %d prompts for the hour.", cfg.MaxPerHour).
			WithDetails(map[string]any{"reason": "hourly", "limit": cfg.MaxPerHour, "retryAfterSeconds": ceilSeconds(wait)})
	}
	o.active++
	o.admitted = append(o.admitted, now)
	o.total++
	q.mu.Unlock()

	var once sync.Once
	return func(outcome string) {
		once.Do(func() { q.finish(key, o, now, outcome) })
	}, nil
}

// finish ends one admission. A refused submission ("refused") is taken
// back entirely, as if it had never been admitted.
func (q *Quota) finish(key string, o *owner, at time.Time, outcome string) {
	q.mu.Lock()
	o.active--
	if outcome == "refused" {
		o.total--
		for i := len(o.admitted) - 1; i >= 0; i-- {
			if o.admitted[i].Equal(at) {
				o.admitted = append(o.admitted[:i], o.admitted[i+1:]...)
				break
			}
		}
		q.mu.Unlock()
		return
	}
	o.prune(q.clock.Now(), q.cfg.Window)
	u := PromptUsage{OwnerKey: key, Outcome: outcome, PromptsInWindow: len(o.admitted)}
	q.mu.Unlock()
	switch u.Outcome {
	case "completed", "cancelled", "failed":
	default:
		u.Outcome = "unknown"
	}
	q.onUsage(u)
}

// Usage returns the counters of an ownerKey ("uid:<uid>").
func (q *Quota) Usage(ownerKey string) Usage {
	q.mu.Lock()
	defer q.mu.Unlock()
	o := q.owners[ownerKey]
	if o == nil {
		return Usage{}
	}
	o.prune(q.clock.Now(), q.cfg.Window)
	return Usage{Active: o.active, InWindow: len(o.admitted), Total: o.total}
}

// Forget drops an owner's counters (the app was uninstalled). Prompts
// still in progress keep their slot until they end.
func (q *Quota) Forget(ownerKey string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if o := q.owners[ownerKey]; o != nil && o.active == 0 {
		delete(q.owners, ownerKey)
	} else if o != nil {
		o.admitted, o.total = nil, 0
	}
}

// prune drops admissions that left the window.
func (o *owner) prune(now time.Time, window time.Duration) {
	i := 0
	for i < len(o.admitted) && !o.admitted[i].Add(window).After(now) {
		i++
	}
	if i > 0 {
		o.admitted = append(o.admitted[:0], o.admitted[i:]...)
	}
}

// ceilSeconds is ceil(d / 1 s), at least 1.
func ceilSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}
