// Package providers opens the model provider a model.Config names:
// "openai" (any OpenAI-compatible Chat Completions endpoint), "anthropic"
// or "scripted". It is the one place that knows every provider, so the
// engine and the daemon depend on package model alone plus this factory;
// it lives apart from package model because the providers import model.
package providers

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/anthropic"
	"github.com/agentoslab/agentlab/runtime/model/openai"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// Provider names accepted in model.Config.Provider.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Scripted  = "scripted"
)

// Options apply to whichever provider is opened. The zero value (or nil)
// works.
type Options struct {
	// Logger is handed to the provider; nil discards.
	Logger *slog.Logger
	// Retry is the HTTP providers' retry policy; the zero value is the
	// spec's (1 s doubling to 30 s, retry-after wins).
	Retry model.RetryPolicy
	// IdleTimeout bounds the silence inside a streamed answer; zero means
	// 5 min, negative means none.
	IdleTimeout time.Duration
	// TLSConfig is for endpoints behind a private CA; nil uses the
	// system roots.
	TLSConfig *tls.Config
	// MaxCompletionTokens makes the OpenAI provider send
	// max_completion_tokens instead of max_tokens.
	MaxCompletionTokens bool
	// Clock times the HTTP providers' retry backoff; nil means the real
	// clock.
	Clock clock.Clock
}

// Open returns the provider cfg names. An HTTP provider without a key or
// a model, an unknown provider and an unreadable script are
// model_not_configured: no request could be sent. The scripted provider
// needs no key; without cfg.Script it echoes, and prompts may carry
// inline scripts.
func Open(cfg model.Config, opts *Options) (model.Provider, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch cfg.Provider {
	// A nil *Provider must not become a non-nil model.Provider.
	case OpenAI:
		p, err := openai.New(cfg, &openai.Options{Logger: o.Logger, Retry: o.Retry, IdleTimeout: o.IdleTimeout,
			TLSConfig: o.TLSConfig, MaxCompletionTokens: o.MaxCompletionTokens, Clock: o.Clock})
		if err != nil {
			return nil, err
		}
		return p, nil
	case Anthropic:
		p, err := anthropic.New(cfg, &anthropic.Options{Logger: o.Logger, Retry: o.Retry, IdleTimeout: o.IdleTimeout,
			TLSConfig: o.TLSConfig, Clock: o.Clock})
		if err != nil {
			return nil, err
		}
		return p, nil
	case Scripted:
		var s *script.Script
		if cfg.Script != "" {
			var err error
			if s, err = script.Load(cfg.Script); err != nil {
				return nil, errcode.Wrap(errcode.ModelNotConfigured, "the model script could not be loaded", err)
			}
		}
		return script.NewProvider(&script.Options{Script: s, Logger: o.Logger}), nil
	case "":
		return nil, errcode.New(errcode.ModelNotConfigured, "no model provider is configured")
	}
	return nil, errcode.Newf(errcode.ModelNotConfigured, "model provider %q is not supported", cfg.Provider)
}
