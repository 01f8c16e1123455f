package httpfail

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

// Setup is what an HTTP provider derives from its model.Config before it
// builds its SDK's service: the checked key and model, the base URL and
// the Client every attempt goes through.
type Setup struct {
	// BaseURL is the configured base URL (or the provider's default)
	// with exactly one trailing slash, as the SDKs join paths to it.
	BaseURL string
	Key     string
	Model   string
	Client  *Client
	// Logger is never nil.
	Logger *slog.Logger
}

// SetupOptions are the provider options that shape the Client; each
// zero value means what the providers' Options document.
type SetupOptions struct {
	Logger      *slog.Logger
	Retry       model.RetryPolicy
	IdleTimeout time.Duration
	TLSConfig   *tls.Config
	Clock       clock.Clock
}

// NewSetup checks cfg for the provider named provider (in log lines) and
// builds its Client. A missing key or model is model_not_configured: no
// request could be sent.
func NewSetup(provider, defaultBaseURL string, cfg model.Config, o SetupOptions) (*Setup, error) {
	if cfg.Key == "" {
		return nil, errcode.New(errcode.ModelNotConfigured, "no model key is configured")
	}
	if cfg.Model == "" {
		return nil, errcode.New(errcode.ModelNotConfigured, "no model is configured")
	}
	base := cfg.BaseURL
	if base == "" {
		base = defaultBaseURL
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Setup{
		BaseURL: strings.TrimRight(base, "/") + "/",
		Key:     cfg.Key,
		Model:   cfg.Model,
		Logger:  logger,
		Client: &Client{
			HTTP:        NewHTTPClient(cfg.Timeout, o.TLSConfig),
			Policy:      o.Retry,
			IdleTimeout: o.IdleTimeout,
			Logger:      logger,
			Provider:    provider,
			Clock:       o.Clock,
		},
	}, nil
}

// SendError is the error of a streamed call that failed before its
// response headers arrived (the SDK stream's first Err): ctx's error when
// ctx ended the call, the model error the Client made, or
// model_protocol for a failure of the SDK's own.
func SendError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *errcode.Error
	if errors.As(err, &e) {
		return e
	}
	return errcode.Wrap(errcode.ModelProtocol, "the model request could not be sent", err)
}

// StreamEnded maps the error an SDK's event stream ended with, before the
// answer was complete, to a model error: none (the body just ended) and
// read failures are stream_interrupted; so is an error the provider
// reported inside the stream (inStream tells those by the SDK's type),
// whose cause is dropped as it may quote the request; anything else is
// model_protocol.
func StreamEnded(err error, inStream func(error) bool) *errcode.Error {
	var rerr *ReadError
	switch {
	case err == nil:
		return Interrupted()
	case errors.As(err, &rerr):
		return Map(Failure{Err: err, AfterHeaders: true})
	case inStream(err):
		return errcode.New(errcode.ModelStreamInterrupted, "the model provider reported an error inside the stream")
	default:
		return Protocol(err)
	}
}
