package daemon

import (
	"errors"
	"log/slog"
	"os"
	"strings"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/providers"
	"github.com/agentoslab/agentlab/runtime/modelconf"
)

// ModelKeyEnv is the environment variable a key may come from; it is
// removed from the environment once read, so children never inherit it.
const ModelKeyEnv = "AGENTOS_MODEL_KEY"

// loadModels is the model configuration of package modelconf
// (<data>/model.json and <data>/model.key). A key given at start —
// keyFile, else $AGENTOS_MODEL_KEY, never a command-line value — is used
// while no model.key exists. Without a usable configuration the runtime
// runs without a model: every task then fails model_not_configured
// without a request. Problems are logged without the key.
func loadModels(data, keyFile string, lookupEnv func(string) (string, bool), c clock.Clock, log *slog.Logger) engine.ModelSource {
	key, err := startupKey(keyFile, lookupEnv)
	if err != nil {
		log.Warn("model key not read", "err", err)
	}
	ms, err := modelconf.Open(data, &modelconf.Options{FallbackKey: key, Providers: &providers.Options{Clock: c}, Logger: log})
	if err != nil {
		log.Warn("model configuration unusable; running without a model", "err", err)
		return nil
	}
	return ms
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
