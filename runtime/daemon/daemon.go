package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentoslab/agentlab/runtime/acp"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Options configure a runtime. Data is required; every other zero value
// works.
type Options struct {
	// Data is the runtime's data directory (created 0700 if missing).
	Data string
	// Version is reported by initialize and the admin status.
	Version string
	// Names are the socket names (a prefix lets several runtimes share a host).
	Names transport.Names
	// ModelKeyFile names a file holding the model key (mode 0600); see
	// the package doc for the other sources.
	ModelKeyFile string
	// Tools is the tool layer; nil means none (every call is
	// tool_not_in_catalog) until the extension host is wired.
	Tools engine.Tools
	// Servers keeps sessions' caller-supplied MCP servers (the
	// extension host's Streamable HTTP client); nil keeps them unconnected.
	Servers acp.SessionServers
	// AllowOwnUID also admits the runtime's own uid on the ACP socket
	// (tests; a device admits only root and shell).
	AllowOwnUID bool
	// Gate admits each ACP-socket connection before ACP starts; nil
	// means UIDGate (root, shell and, with AllowOwnUID, the runtime's uid).
	// Desktop pairing replaces it.
	Gate Gate
	// SafeMode refuses new prompts (safe_mode) from the start.
	SafeMode bool
	// Admission, when set, replaces the engine's default prompt check
	// (the caller quotas, runtime/access).
	Admission engine.Admission
	// Models, when set, replaces the model configuration read from Data
	// (a store the owner changes at run time, runtime/access).
	Models engine.ModelSource
	// Attach, when set, starts what serve runs beside the ACP agent once
	// the runtime is open (caller channel, desktop pairing, admin API);
	// its stop runs before the runtime closes. When it reports ownsACP,
	// serve does not listen on the ACP socket itself.
	Attach func(ctx context.Context, r *Runtime) (stop func(), ownsACP bool, err error)
	// Clock is the time of every part of the runtime (timestamps and the
	// product's timers); nil means the real clock. serve passes the one
	// from runtime/clock/labclock.
	Clock clock.Clock
	// HeartbeatEvery is the heartbeat interval; zero means 5 s.
	HeartbeatEvery time.Duration
	// ShutdownWait bounds a graceful stop; zero means 12 s.
	ShutdownWait time.Duration
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger receives ids, codes and counts (text on stderr in the
	// command); nil discards.
	Logger *slog.Logger

	// drainOnEOF: answer what a connection sent before its input ended (stdio).
	drainOnEOF bool
}

// Runtime is a running agentosd: every subsystem it wires together.
type Runtime struct {
	Store  *store.Store
	Models engine.ModelSource
	Engine *engine.Engine
	Agent  *acp.Agent

	opts Options
	log  *slog.Logger
	beat *heartbeat
}

// Open opens the store, loads the model configuration, starts the engine
// (recovering unfinished tasks) and the heartbeat. Close undoes it.
func Open(ctx context.Context, opts *Options) (*Runtime, error) {
	if opts == nil || opts.Data == "" {
		return nil, errors.New("daemon: a data directory is required")
	}
	o := *opts
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HeartbeatEvery <= 0 {
		o.HeartbeatEvery = 5 * time.Second
	}
	if o.ShutdownWait <= 0 {
		o.ShutdownWait = 12 * time.Second
	}
	if o.Tools == nil {
		o.Tools = noTools{}
	}
	o.Clock = clock.Or(o.Clock)
	if err := os.MkdirAll(o.Data, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: data directory: %w", err)
	}
	r := &Runtime{opts: o, log: o.Logger, beat: newHeartbeat(o.Data, o.HeartbeatEvery, o.Clock)}
	if err := r.beat.set(stateStarting, 0); err != nil {
		r.log.Warn("heartbeat not written", "err", err)
	}
	st, err := store.Open(ctx, filepath.Join(o.Data, "agentos.db"))
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	r.Store = st
	r.Models = o.Models
	if r.Models == nil {
		r.Models = loadModels(o.Data, o.ModelKeyFile, o.LookupEnv, o.Clock, o.Logger)
	}
	r.beat.set(stateRecovering, 0)
	r.Engine, err = engine.New(ctx, &engine.Options{
		Store: st, Tools: o.Tools, Models: r.Models, Admission: o.Admission, Clock: o.Clock, Logger: o.Logger, Notify: r.beat.poke,
	})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("daemon: %w", err)
	}
	r.Engine.SetSafeMode(o.SafeMode)
	r.Agent = acp.New(r.Engine, &acp.Options{Version: o.Version, Logger: o.Logger, DrainOnEOF: o.drainOnEOF, Servers: o.Servers, Clock: o.Clock})
	r.beat.start(func() int {
		s := r.Engine.Stats()
		return s.Running + s.Queued
	})
	return r, nil
}

// Close stops the runtime: new prompts are refused, running and queued
// tasks are cancelled and written as such (a task that does not stop in
// ShutdownWait stays running in the store and is recovered by the next
// start), the heartbeat says stopping, and the store is closed.
func (r *Runtime) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.ShutdownWait)
	defer cancel()
	r.beat.close()
	st := r.Engine.Stats()
	r.beat.set(stateStopping, st.Running+st.Queued)
	errEngine := r.Engine.Close(ctx)
	errStore := r.Store.Close()
	return errors.Join(errEngine, errStore)
}
