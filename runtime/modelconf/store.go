package modelconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/providers"
)

// File names under the data directory.
const (
	ConfigFile = "model.json"
	KeyFile    = "model.key"
)

// Options configure a Store.
type Options struct {
	// Providers are handed to providers.Open.
	Providers *providers.Options
	// FallbackKey is used while no model.key exists (a key the runtime
	// was started with from $AGENTOS_MODEL_KEY or a key file flag).
	FallbackKey string
	// Logger receives provider names and outcomes, never keys; nil
	// discards.
	Logger *slog.Logger
}

// Store holds the model configuration. Safe for concurrent use.
type Store struct {
	dir      string
	opts     *providers.Options
	fallback string
	log      *slog.Logger

	mu       sync.Mutex // guards the fields below
	cfg      model.Config
	set      bool // a configuration exists
	provider model.Provider
	openErr  error
	loadErr  string // why model.json was not used
	// revoked is closed when the owner removes the key: every turn that
	// leased a configuration since the last removal is then stopped.
	revoked chan struct{}
}

var _ engine.ModelLeaser = (*Store)(nil)

// Open reads the configuration from dir (the runtime's data directory).
// No model.json means no model; a broken one is an error (the owner
// fixes it with model set or model clear).
func Open(dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Store{dir: dir, opts: o.Providers, fallback: o.FallbackKey, log: o.Logger, revoked: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	var cfg model.Config
	if err == nil {
		if len(data) > maxConfigBytes {
			err = fmt.Errorf("over %d bytes", maxConfigBytes)
		} else {
			cfg, err = parseConfig(data)
		}
	}
	if err != nil {
		// The runtime runs without a model until the owner sets one.
		s.loadErr = fmt.Sprintf("%s unusable", ConfigFile)
		s.log.Warn("modelconf: "+s.loadErr+"; running without a model", "err", err)
		return s, nil
	}
	cfg.Key = s.storedKey()
	s.apply(cfg)
	return s, nil
}

// maxConfigBytes bounds model.json.
const maxConfigBytes = 64 << 10

func parseConfig(data []byte) (model.Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg model.Config
	if err := dec.Decode(&cfg); err != nil {
		return model.Config{}, err
	}
	return cfg, validate(cfg)
}

func validate(cfg model.Config) error {
	switch cfg.Provider {
	case providers.OpenAI, providers.Anthropic:
		if cfg.BaseURL == "" || cfg.Model == "" {
			return errors.New("openai and anthropic need a base URL and a model")
		}
	case providers.Scripted:
	default:
		return fmt.Errorf("unknown provider %q (want openai, anthropic or scripted)", cfg.Provider)
	}
	if len(cfg.Choices) > 0 && !slices.Contains(cfg.Choices, cfg.Model) {
		return errors.New("choices must include the model")
	}
	return nil
}

// apply makes cfg current; mu must not be held.
func (s *Store) apply(cfg model.Config) {
	p, err := providers.Open(cfg, s.opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.set, s.provider, s.openErr, s.loadErr = cfg, true, p, err, ""
	if err != nil {
		s.log.Info("modelconf: model not usable", "provider", cfg.Provider, "code", string(errcode.CodeOf(err)))
	}
}

// Current implements engine.ModelSource.
func (s *Store) Current() (model.Config, model.Provider, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set || s.provider == nil {
		return s.cfg, nil, false
	}
	return s.cfg, s.provider, true
}

// Lease implements engine.ModelLeaser: revoked is closed by the next
// Clear (or a Set that removes the key), which stops the turns using
// this configuration with model_not_configured, reason key_revoked.
func (s *Store) Lease() (model.Config, model.Provider, <-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set || s.provider == nil {
		return s.cfg, nil, nil, false
	}
	return s.cfg, s.provider, s.revoked, true
}

// revokeLocked stops the turns of every configuration leased so far;
// s.mu must be held.
func (s *Store) revokeLocked() {
	close(s.revoked)
	s.revoked = make(chan struct{})
}

// Info is the configuration as `model show` reports it: never the key.
type Info struct {
	Configured bool     `json:"configured"`
	Provider   string   `json:"provider,omitempty"`
	BaseURL    string   `json:"baseUrl,omitempty"`
	Model      string   `json:"model,omitempty"`
	Choices    []string `json:"choices,omitempty"`
	Script     string   `json:"script,omitempty"`
	KeySet     bool     `json:"keySet"`
	Usable     bool     `json:"usable"`
	// Problem says why the model is not usable (an error code).
	Problem string `json:"problem,omitempty"`
}

// Show reports the configuration.
func (s *Store) Show() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set {
		return Info{Problem: s.loadErr}
	}
	in := Info{Configured: true, Provider: s.cfg.Provider, BaseURL: s.cfg.BaseURL, Model: s.cfg.Model,
		Choices: slices.Clone(s.cfg.Choices), Script: s.cfg.Script, KeySet: s.cfg.Key != "", Usable: s.provider != nil}
	if s.openErr != nil {
		in.Problem = string(errcode.CodeOf(s.openErr))
	}
	return in
}

// Set replaces the configuration. key nil keeps the stored key; a
// pointer to "" removes it.
func (s *Store) Set(cfg model.Config, key *string) error {
	cfg.Key = ""
	if err := validate(cfg); err != nil {
		return errcode.Wrap(errcode.InvalidParams, err.Error(), err)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return errcode.Wrap(errcode.Internal, "the configuration could not be encoded", err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return errcode.Wrap(errcode.StoreFailed, "the data directory is not writable", err)
	}
	keyPath := filepath.Join(s.dir, KeyFile)
	switch {
	case key == nil:
		cfg.Key = s.storedKey()
	case *key == "":
		if err := os.Remove(keyPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return errcode.Wrap(errcode.StoreFailed, "the key file could not be removed", err)
		}
		// A removed key stops the turns using it, as model clear does.
		s.mu.Lock()
		removed := s.cfg.Key != "" || s.fallback != ""
		s.fallback = ""
		if removed {
			s.revokeLocked()
		}
		s.mu.Unlock()
	default:
		if err := writeFile(keyPath, []byte(*key+"\n")); err != nil {
			return errcode.Wrap(errcode.StoreFailed, "the key file could not be written", err)
		}
		cfg.Key = *key
	}
	if err := writeFile(filepath.Join(s.dir, ConfigFile), append(b, '\n')); err != nil {
		return errcode.Wrap(errcode.StoreFailed, "the configuration could not be written", err)
	}
	s.apply(cfg)
	s.log.Info("modelconf: model set", "provider", cfg.Provider, "keySet", cfg.Key != "")
	if faultinject.Enabled && faultinject.Active(faultinject.ModelKeyLogged) {
		s.log.Warn("modelconf: model key", "key", cfg.Key) // injected fault
	}
	return nil
}

// storedKey is model.key's key, else the fallback key.
func (s *Store) storedKey() string {
	k, err := model.KeyFromFile(filepath.Join(s.dir, KeyFile))
	if err == nil {
		return k
	}
	if !errors.Is(err, os.ErrNotExist) {
		// The error names the path and the mode, never the key.
		s.log.Warn("modelconf: key file not used", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fallback
}

// Clear removes the configuration and the key: tasks from now on fail
// model_not_configured.
func (s *Store) Clear() error {
	for _, name := range []string{KeyFile, ConfigFile} {
		if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return errcode.Wrap(errcode.StoreFailed, "the model configuration could not be removed", err)
		}
	}
	s.mu.Lock()
	s.cfg, s.set, s.provider, s.openErr, s.loadErr = model.Config{}, false, nil, nil, ""
	// A cleared key stays cleared, whatever the runtime started with.
	s.fallback = ""
	// The turns using the cleared configuration stop (spec §3.2,
	// key_revoked); tasks that start from now on find no model.
	s.revokeLocked()
	s.mu.Unlock()
	s.log.Info("modelconf: model cleared")
	return nil
}

// writeFile writes through a 0600 temp file and an atomic rename.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
