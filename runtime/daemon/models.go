package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/providers"
)

// Files of the model configuration in the data directory.
const (
	modelConfigFile = "model.json"
	modelKeyFile    = "model.key"
	// ModelKeyEnv is the environment variable a key may come from; it is
	// removed from the environment once read, so children never inherit it.
	ModelKeyEnv = "AGENTOS_MODEL_KEY"
	// maxModelConfig bounds model.json.
	maxModelConfig = 64 << 10
)

// loadModels reads <data>/model.json and the key and opens the provider.
// The key comes from keyFile when set, else $AGENTOS_MODEL_KEY, else
// <data>/model.key; never from a command-line value. Without a
// configuration, or with one that cannot be used, the runtime runs
// without a model: every task then fails model_not_configured without a
// request. Problems are logged without the key.
func loadModels(data, keyFile string, lookupEnv func(string) (string, bool), log *slog.Logger) engine.ModelSource {
	cfg, err := readModelConfig(filepath.Join(data, modelConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("no model configured")
		return nil
	}
	if err != nil {
		log.Warn("model configuration unusable; running without a model", "err", err)
		return nil
	}
	key, source, err := readModelKey(data, keyFile, lookupEnv)
	if err != nil {
		log.Warn("model key unreadable; running without a model", "source", source, "err", err)
		return nil
	}
	cfg.Key = key
	p, err := providers.Open(cfg, &providers.Options{Logger: log})
	if err != nil {
		log.Warn("model provider not opened; running without a model", "provider", cfg.Provider, "err", err)
		return nil
	}
	log.Info("model configured", "provider", cfg.Provider, "keySource", source)
	return engine.StaticModel(cfg, p)
}

func readModelConfig(path string) (model.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return model.Config{}, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxModelConfig+1)); err != nil {
		return model.Config{}, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	if buf.Len() > maxModelConfig {
		return model.Config{}, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), maxModelConfig)
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	var cfg model.Config
	if err := dec.Decode(&cfg); err != nil {
		return model.Config{}, fmt.Errorf("parse %s: %w", filepath.Base(path), err)
	}
	if cfg.Provider == "" {
		return model.Config{}, fmt.Errorf("%s names no provider", filepath.Base(path))
	}
	return cfg, nil
}

// readModelKey returns the key and where it came from ("" key: none, which
// the scripted provider accepts).
func readModelKey(data, keyFile string, lookupEnv func(string) (string, bool)) (string, string, error) {
	if keyFile != "" {
		k, err := model.KeyFromFile(keyFile)
		return k, "--model-key-file", err
	}
	if v, ok := lookupEnv(ModelKeyEnv); ok {
		os.Unsetenv(ModelKeyEnv)
		k, err := model.KeyFromReader(strings.NewReader(v))
		return k, "$" + ModelKeyEnv, err
	}
	path := filepath.Join(data, modelKeyFile)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", "none", nil
	}
	k, err := model.KeyFromFile(path)
	return k, modelKeyFile, err
}
