package httpfail

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/platform"
)

// Defaults for the HTTP layer of the providers.
const (
	// DefaultTimeout bounds connecting (TCP and TLS) and the wait for
	// response headers when model.Config.Timeout is zero.
	DefaultTimeout = 60 * time.Second
	// DefaultIdleTimeout bounds the silence between two reads of a
	// streamed answer. Reasoning models can think for minutes without
	// sending a byte, so it is generous.
	DefaultIdleTimeout = 5 * time.Minute
	// maxErrorDrain is how much of an error body is read (and dropped)
	// so the connection can be reused; the body itself is never kept.
	maxErrorDrain = 64 << 10
)

// NewHTTPClient returns the http.Client the providers use: no proxy from
// the environment, redirects not followed (a 3xx is an answer, mapped to
// model_protocol), connect, TLS handshake and header wait each bounded by
// timeout (zero means DefaultTimeout). tlsConfig may be nil. Host names
// resolve through the platform's resolver (netd on Android).
func NewHTTPClient(timeout time.Duration, tlsConfig *tls.Config) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := &http.Transport{
		DialContext:            platform.Current().DialContext(&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}),
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           8,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Client sends model requests with the retry policy of spec §3.5. It
// implements the SDKs' HTTPClient interface (Do), so the SDKs' own retries
// stay off (they are configured with zero retries) and every attempt goes
// through here. Errors it returns are *errcode.Error model errors, or the
// request context's error when that ended the call.
//
// A successful response's body reports read errors as *ReadError and is
// closed when nothing arrives for IdleTimeout.
type Client struct {
	// HTTP sends one attempt; it must not follow redirects.
	HTTP *http.Client
	// Policy is the retry policy (zero value: spec defaults).
	Policy model.RetryPolicy
	// IdleTimeout bounds the silence on a streamed body; zero means
	// DefaultIdleTimeout, negative means none.
	IdleTimeout time.Duration
	// Logger gets one line per retry; nil discards.
	Logger *slog.Logger
	// Provider names the provider in log lines.
	Provider string
	// Clock times the waits between attempts (the retry backoff); nil
	// means the real clock. (Connecting, headers and a body's silence
	// are I/O, bounded on the wall clock.)
	Clock clock.Clock
}

// Do sends req, retrying as the policy allows.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	p := c.Policy.WithDefaults()
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			// A retry only happens when replayable(req), so GetBody is set.
			body, err := req.GetBody()
			if err != nil {
				return nil, Map(Failure{Err: err})
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		var connected atomic.Bool
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))

		resp, err := c.HTTP.Do(r)
		if ctx.Err() != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, ctx.Err()
		}
		var f Failure
		if err != nil {
			f = Failure{Err: err, Connected: connected.Load()}
		} else if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			resp.Body = newBody(resp.Body, c.idleTimeout())
			return resp, nil
		} else {
			f = Failure{Status: resp.StatusCode, Header: resp.Header}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorDrain))
			resp.Body.Close()
		}
		e := Map(f)
		wait, ok := c.wait(ctx, p, f, e, attempt)
		if !ok || !replayable(req) {
			return nil, e
		}
		c.logger().LogAttrs(ctx, slog.LevelInfo, "model call retry",
			slog.String("provider", c.Provider),
			slog.Int("attempt", attempt+1),
			slog.String("code", string(e.Code)),
			slog.Int("status", f.Status),
			slog.Duration("wait", wait))
		if err := clock.Sleep(ctx, clock.Or(c.Clock), wait); err != nil {
			return nil, err
		}
	}
}

// replayable reports whether req's body can be sent again. The SDKs
// always buffer request bodies, so this holds for every model call.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// wait decides whether attempt (0-based) is retried and after how long.
func (c *Client) wait(ctx context.Context, p model.RetryPolicy, f Failure, e *errcode.Error, attempt int) (time.Duration, bool) {
	if attempt >= p.MaxRetries || !Retryable(f, e) {
		return 0, false
	}
	d := p.Backoff(attempt)
	if f.Status != 0 {
		if ra, ok := RetryAfter(f.Header, time.Now()); ok {
			if ra > p.MaxRetryAfter {
				return 0, false
			}
			d = ra
		}
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return 0, false
	}
	return d, true
}

func (c *Client) idleTimeout() time.Duration {
	switch {
	case c.IdleTimeout == 0:
		return DefaultIdleTimeout
	case c.IdleTimeout < 0:
		return 0
	}
	return c.IdleTimeout
}

func (c *Client) logger() *slog.Logger {
	if c.Logger == nil {
		return discard
	}
	return c.Logger
}

var discard = slog.New(slog.DiscardHandler)

// FinishGrace is how long a provider keeps reading after the answer is
// complete ([DONE], the end of the response), so the connection can be
// reused; a server that sends nothing more is cut off after it.
const FinishGrace = 2 * time.Second

// Finishing tells a response body from Client.Do that the answer is
// complete: from now on it waits at most d for more bytes. Other bodies
// are left alone.
func Finishing(rc io.Closer, d time.Duration) {
	b, ok := rc.(*body)
	if !ok {
		return
	}
	b.idle.Store(int64(d))
	b.timer.Reset(d)
}

// body wraps a streamed response body: read errors become *ReadError, and
// a timer closes the body when nothing arrives for idle. Read and
// Finishing are called from the reading goroutine, Close from any.
type body struct {
	rc       io.ReadCloser
	idle     atomic.Int64 // time.Duration
	timer    *time.Timer
	timedOut atomic.Bool
	once     sync.Once
}

func newBody(rc io.ReadCloser, idle time.Duration) *body {
	b := &body{rc: rc}
	b.idle.Store(int64(idle))
	// The timer always exists (stopped when there is no idle limit) so
	// Finishing never races Close over the field.
	if idle > 0 {
		b.timer = time.AfterFunc(idle, b.expire)
	} else {
		b.timer = time.AfterFunc(time.Hour, b.expire)
		b.timer.Stop()
	}
	return b
}

func (b *body) expire() {
	b.timedOut.Store(true)
	b.rc.Close()
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if idle := time.Duration(b.idle.Load()); idle > 0 && n > 0 {
		b.timer.Reset(idle)
	}
	if err != nil && err != io.EOF {
		if b.timedOut.Load() {
			err = ErrIdle
		}
		err = &ReadError{Err: err}
	}
	return n, err
}

// Close is safe to call from any goroutine, concurrently with Read.
func (b *body) Close() error {
	var err error
	b.once.Do(func() {
		b.timer.Stop()
		err = b.rc.Close()
	})
	return err
}
