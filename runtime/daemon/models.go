package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/providers"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"github.com/agentoslab/agentlab/runtime/modelconf"
)

// ModelKeyEnv is the environment variable a key may come from; it is
// removed from the environment once read, so children never inherit it.
const ModelKeyEnv = "AGENTOS_MODEL_KEY"

// StdioNoModelText is the model_not_configured text of agentosd stdio
// without a model: it names the commands that give it one.
const StdioNoModelText = "No usable model is configured for agentosd stdio: start it with --model-script FILE " +
	"(or --model scripted, and prompts that start with #!agentos-script), " +
	"or set one with agentosd ctl model set while agentosd serve runs on the same data directory."

// openModels is the engine's model source and the one place the model
// configuration and key are read: Options.Model for this run, else
// package modelconf's <data>/model.json with <data>/model.key, or a key
// given at start (ModelKeyFile, else $AGENTOS_MODEL_KEY, never a
// command-line value) while no model.key exists. Without a usable
// configuration the runtime runs without a model: every task then fails
// model_not_configured without a request. Problems are logged without
// the key. Under stdio a prompt that is its own script runs on the
// scripted provider even then.
func (s *System) openModels() (engine.ModelSource, error) {
	o := s.opts
	var src engine.ModelSource
	if o.Model != nil {
		p, err := providers.Open(*o.Model, &providers.Options{Clock: o.Clock, Logger: o.Logger})
		if err != nil {
			return nil, fmt.Errorf("daemon: model: %w", err)
		}
		src = engine.StaticModel(*o.Model, p)
	} else {
		key, err := startupKey(o.ModelKeyFile, o.LookupEnv)
		if err != nil {
			// Named without the key; the owner can still set one.
			s.log.Warn("model key not read", "err", err)
		}
		if s.Models, err = modelconf.Open(o.Data, &modelconf.Options{FallbackKey: key, Providers: &providers.Options{Clock: o.Clock},
			Logger: o.Logger}); err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		src = s.Models
	}
	if o.stdio {
		src = inlineScripts{src: src, scripted: inlineOnly{script.NewProvider(&script.Options{Logger: o.Logger})}}
	}
	return src, nil
}

// startupKey reads keyFile, else $AGENTOS_MODEL_KEY ("" when neither).
func startupKey(keyFile string, lookupEnv func(string) (string, bool)) (string, error) {
	if keyFile != "" {
		return model.KeyFromFile(keyFile)
	}
	v, ok := lookupEnv(ModelKeyEnv)
	if !ok {
		return "", nil
	}
	os.Unsetenv(ModelKeyEnv)
	k, err := model.KeyFromReader(strings.NewReader(v))
	if errors.Is(err, model.ErrNoKey) {
		return "", nil
	}
	return k, err
}

// inlineScripts is stdio's model source: src while it has a usable
// model, else the scripted provider for prompts that carry their own
// script (inlineOnly).
type inlineScripts struct {
	src      engine.ModelSource
	scripted model.Provider
}

var _ engine.ModelLeaser = inlineScripts{}

var scriptedConfig = model.Config{Provider: providers.Scripted}

func (m inlineScripts) Current() (model.Config, model.Provider, bool) {
	if cfg, p, ok := m.src.Current(); ok {
		return cfg, p, true
	}
	return scriptedConfig, m.scripted, true
}

func (m inlineScripts) Lease() (model.Config, model.Provider, <-chan struct{}, bool) {
	if l, ok := m.src.(engine.ModelLeaser); ok {
		if cfg, p, revoked, ok := l.Lease(); ok {
			return cfg, p, revoked, true
		}
	} else if cfg, p, ok := m.src.Current(); ok {
		return cfg, p, nil, true
	}
	return scriptedConfig, m.scripted, nil, true
}

// inlineOnly answers only turns whose prompt is a script document; any
// other is model_not_configured, saying how to give stdio a model.
type inlineOnly struct{ p model.Provider }

func (p inlineOnly) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	if !script.Inline(req) {
		return nil, errcode.New(errcode.ModelNotConfigured, StdioNoModelText)
	}
	return p.p.Stream(ctx, req)
}
