package model

import "time"

// Retry defaults (spec §3.5): exponential backoff from 1 s doubling up to
// 30 s.
const (
	DefaultRetryBase     = time.Second
	DefaultRetryCap      = 30 * time.Second
	DefaultMaxRetries    = 5
	DefaultMaxRetryAfter = 2 * time.Minute
)

// RetryPolicy says how an HTTP provider retries one model call. Retries
// happen only before response headers are handed on, and only for
// model_network, model_timeout while connecting, model_rate_limited and
// model_unavailable; a retry-after header wins over the backoff. No wait
// ever outlasts the call's ctx deadline: when the next wait would, the
// last error is returned at once. The zero value is the spec's policy.
type RetryPolicy struct {
	// Base is the first backoff; zero means 1 s.
	Base time.Duration
	// Cap bounds the doubled backoff; zero means 30 s.
	Cap time.Duration
	// MaxRetries bounds the retries of one call when ctx has no deadline
	// (or a far one); zero means 5, negative means never retry.
	MaxRetries int
	// MaxRetryAfter is the longest retry-after the provider waits for;
	// a longer one ends the call with model_rate_limited (or
	// model_unavailable) carrying retryAfterSeconds. Zero means 2 min.
	MaxRetryAfter time.Duration
}

// WithDefaults returns p with every zero field set to its default. It is
// idempotent; a negative MaxRetries stays negative (no retries).
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = DefaultRetryBase
	}
	if p.Cap <= 0 {
		p.Cap = DefaultRetryCap
	}
	if p.Cap < p.Base {
		p.Cap = p.Base
	}
	if p.MaxRetries == 0 {
		p.MaxRetries = DefaultMaxRetries
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// Backoff is the wait before retry number n (0-based) without a
// retry-after: Base doubled n times, at most Cap.
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.WithDefaults()
	d := p.Base
	for i := 0; i < n && d < p.Cap; i++ {
		d *= 2
	}
	return min(d, p.Cap)
}
