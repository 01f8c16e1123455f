package script

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/httpfail"
)

// Options configure the scripted provider. The zero value (or nil) works:
// every answer echoes, and prompts may carry inline scripts.
type Options struct {
	// Script answers the calls; nil is the empty script.
	Script *Script
	// Logger gets a line per script error (never its reason, which may
	// quote the prompt); nil discards.
	Logger *slog.Logger
}

// Provider serves a script as a model.Provider. It fails exactly as an
// HTTP provider would (the same error codes and details) and honours
// delays with the call's ctx. It is safe for concurrent use.
type Provider struct {
	script *Script
	logger *slog.Logger
}

var _ model.Provider = (*Provider)(nil)

// NewProvider returns a provider serving opts.Script.
func NewProvider(opts *Options) *Provider {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Provider{script: o.Script, logger: o.Logger}
}

// Stream answers req. A status failure returns its model error (after
// the step's delay); a hang blocks until ctx ends. With no delays set
// every event is ready at once.
func (p *Provider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	resp, err := p.script.Respond(req)
	if err != nil {
		// The reason can quote an inline script, which is prompt text; it
		// reaches the transcript as the answer instead.
		p.logger.Warn("model script error: answered with script-error text")
	}
	switch {
	case resp.Hang:
		<-ctx.Done()
		return nil, ctx.Err()
	case resp.Status != 0:
		if err := sleep(ctx, nil, resp.Delay); err != nil {
			return nil, err
		}
		return nil, httpfail.StatusError(resp.Status, resp.RetryAfter)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &stream{ctx: ctx, resp: resp, closed: make(chan struct{})}, nil
}

// stream plays a Response. Next is called from one goroutine; Close may
// be called from any.
type stream struct {
	ctx       context.Context
	resp      Response
	next      int // index of the next event in resp.Events
	started   bool
	done      bool
	closed    chan struct{}
	closeOnce sync.Once
}

func (s *stream) Next() (model.Event, error) {
	if err := s.stopped(); err != nil {
		return model.Event{}, err
	}
	if s.done {
		return model.Event{}, io.EOF
	}
	// Delay comes before the first event (or the end, when there are no
	// events); Interval between events.
	var wait time.Duration
	switch {
	case !s.started:
		wait = s.resp.Delay
	case s.next < len(s.resp.Events):
		wait = s.resp.Interval
	}
	s.started = true
	if err := sleep(s.ctx, s.closed, wait); err != nil {
		return model.Event{}, err
	}
	if s.next < len(s.resp.Events) {
		ev := s.resp.Events[s.next]
		s.next++
		return ev, nil
	}
	switch s.resp.End {
	case EndCut:
		s.done = true
		return model.Event{}, httpfail.Map(httpfail.Failure{Err: io.ErrUnexpectedEOF, AfterHeaders: true})
	case EndStall:
		select {
		case <-s.ctx.Done():
		case <-s.closed:
		}
		return model.Event{}, s.stopped()
	}
	s.done = true
	return model.Event{Kind: model.Done, StopReason: s.resp.Stop}, nil
}

func (s *stream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// stopped returns why the stream can go no further: closed or ctx done.
func (s *stream) stopped() error {
	select {
	case <-s.closed:
		return httpfail.ErrClosed
	default:
	}
	return s.ctx.Err()
}

// sleep waits d unless ctx ends or closed is closed first; d == 0 does
// not wait at all.
func sleep(ctx context.Context, closed <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return httpfail.ErrClosed
	case <-t.C:
		return nil
	}
}
