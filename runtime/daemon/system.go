package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/controller"
	"github.com/agentoslab/agentlab/runtime/acp"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/console"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/ext/sessionmcp"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/modelconf"
	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Options configure a runtime: the one value every subsystem is built
// from. Data is required; every other zero value works.
type Options struct {
	// Data is the runtime's data directory (created 0700 if missing).
	Data string
	// Version is reported by initialize and the admin status.
	Version string
	// Names are the socket names (a prefix lets several runtimes share a host).
	Names transport.Names
	// Root is the supervisor's root (supervise.RuntimeEnv.Root). Without
	// it there is no package table: every app uid is refused not_open on
	// the caller channel (nothing identifies it), and the app methods of
	// the admin API say there is no supervisor.
	Root string
	// ModelKeyFile names a file holding the model key (mode 0600); see
	// the package doc for the other sources.
	ModelKeyFile string
	// Model, when set, is the model for this run instead of the
	// configuration on disk (`agentosd stdio --model-script`); it is not
	// saved and needs no key.
	Model *model.Config
	// Tools is the tool layer. Nil means the extension host (serve starts
	// `agentosd ext` and its broker is the tool layer) or none (stdio:
	// every call is tool_not_in_catalog). A test build's tools replace the
	// extension host.
	Tools engine.Tools
	// ExtFlags are extra `agentosd ext` flags (timeouts in tests), and
	// ExtStderr receives its log (nil discards).
	ExtFlags  []string
	ExtStderr io.Writer
	// AllowOwnUID is the core's test mode: the ACP socket is served
	// uid-gated (root, shell and the runtime's own uid) instead of through
	// desktop pairing.
	AllowOwnUID bool
	// SafeMode refuses new prompts (safe_mode) from the start.
	SafeMode bool
	// Clock is the time of every part of the runtime (timestamps and the
	// product's timers); nil means the real clock. serve passes the one
	// from runtime/clock/labclock, and Labclock for its admin methods.
	Clock    clock.Clock
	Labclock *labclock.Owner
	// HeartbeatEvery is the heartbeat interval; zero means 5 s.
	HeartbeatEvery time.Duration
	// ShutdownWait bounds a graceful stop; zero means 12 s.
	ShutdownWait time.Duration
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger receives ids, codes and counts (text on stderr in the
	// command); nil discards.
	Logger *slog.Logger

	// stdio: no doors for others, inline scripts without a model, and a
	// connection that answers what it read before its input ended.
	stdio bool
}

// System is one running agentosd: every subsystem it wires together, in
// the order Open builds them (Close closes them in reverse). Fields a
// run does without are nil: the doors for others under Stdio, the
// extension host with test tools, the package table without a
// supervisor, Bridge or ACP by AllowOwnUID.
type System struct {
	// Store holds sessions, tasks, the event log and policies.
	Store *store.Store
	// Models is the model configuration the owner changes at run time
	// (nil when Options.Model fixes the model for this run).
	Models *modelconf.Store
	// Quota is the caller quotas, the engine's Admission.
	Quota *quota.Quota
	// Sessions keeps sessions' caller-supplied MCP servers.
	Sessions *sessionmcp.Manager
	// Broker is serve's side of the extension host and the tool layer.
	Broker *broker.Broker
	// Engine runs sessions, tasks and the turn loop.
	Engine *engine.Engine
	// Agent is ACP over the engine, shared by every connection.
	Agent *acp.Agent
	// Callers is the caller authorization registry.
	Callers *callers.Registry
	// Apps is the package table (the supervisor's, read-only) and
	// Launcher the supervisor's launcher.
	Apps     *apps.Table
	Launcher *launcher.Client
	// ACI is the runtime as ACI controller: the apps' capabilities as
	// tools of the broker (with the package table and the extension host).
	ACI *controller.Controller
	// Caller serves the caller channel (@agentos-caller).
	Caller *callerchan.Server
	// Bridge is desktop access with pairing (@agentos-acp while on).
	Bridge *bridge.Bridge
	// Admin serves the owner's admin API (@agentos-admin).
	Admin *admin.Server
	// Console is the owner's web console (@agentos-console), every action
	// an admin method call.
	Console *console.Server
	// ACP serves @agentos-acp uid-gated instead of Bridge (AllowOwnUID),
	// started last.
	ACP *transport.Service

	opts       Options
	log        *slog.Logger
	beat       *heartbeat
	stopFollow func() // ends the package table's change feed
	stopACI    func() // ends the ACI controller's discovery
}

// Open builds the runtime for `agentosd serve`: every subsystem, in the
// order of the package doc, listening once it returns. The engine
// recovers what a previous run left unfinished. On failure what was
// built is closed again.
func Open(ctx context.Context, opts *Options) (*System, error) {
	return open(ctx, opts, false)
}

func open(ctx context.Context, opts *Options, stdio bool) (s *System, err error) {
	if opts == nil || opts.Data == "" {
		return nil, errors.New("daemon: a data directory is required")
	}
	o := *opts
	o.stdio = stdio
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
	o.Clock = clock.Or(o.Clock)
	if err := os.MkdirAll(o.Data, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: data directory: %w", err)
	}
	s = &System{opts: o, log: o.Logger, beat: newHeartbeat(o.Data, o.HeartbeatEvery, o.Clock)}
	defer func() {
		if err != nil {
			s.Close(ctx)
			s = nil
		}
	}()
	if err := s.beat.set(stateStarting, 0); err != nil {
		s.log.Warn("heartbeat not written", "err", err)
	}
	if s.Store, err = store.Open(ctx, filepath.Join(o.Data, storeFile)); err != nil {
		return s, fmt.Errorf("daemon: %w", err)
	}
	models, err := s.openModels()
	if err != nil {
		return s, err
	}
	var admission engine.Admission
	if !stdio {
		s.Quota = quota.New(&quota.Options{Clock: o.Clock, Logger: o.Logger})
		admission = s.Quota
	}
	tools := o.Tools
	var servers acp.SessionServers
	switch {
	case tools != nil:
	case stdio:
		tools = noTools{}
	default:
		s.Sessions = sessionmcp.New(&sessionmcp.Options{Clock: o.Clock, Logger: o.Logger})
		var aci broker.ACITools
		if o.Root != "" {
			if err := s.openApps(); err != nil {
				return s, err
			}
			s.ACI = controller.New(controller.Options{Packages: s.Apps, Names: o.Names, Launcher: s.Launcher, Clock: o.Clock, Logger: o.Logger})
			aci = s.ACI
		}
		s.Broker = broker.New(broker.Options{
			Names: o.Names, DataDir: o.Data, AppsDir: supervise.RuntimeEnv{Root: o.Root}.AppsDir(),
			ExtFlags: o.ExtFlags, ExtStderr: o.ExtStderr, Sessions: s.Sessions, ACI: aci, Clock: o.Clock, Logger: o.Logger,
		})
		if err := s.Broker.Start(ctx); err != nil {
			return s, err
		}
		tools, servers = s.Broker, s.Sessions
	}
	s.beat.set(stateRecovering, 0)
	if s.Engine, err = engine.New(ctx, &engine.Options{
		Store: s.Store, Tools: tools, Models: models, Admission: admission, Clock: o.Clock, Logger: o.Logger, Notify: s.beat.poke,
	}); err != nil {
		return s, fmt.Errorf("daemon: %w", err)
	}
	s.Engine.SetSafeMode(o.SafeMode)
	s.Agent = acp.New(s.Engine, &acp.Options{Version: o.Version, Logger: o.Logger, DrainOnEOF: stdio, Servers: servers, Clock: o.Clock})
	s.beat.start(func() int {
		st := s.Engine.Stats()
		return st.Running + st.Queued
	})
	if stdio {
		return s, nil
	}
	if err := s.openDoors(ctx); err != nil {
		return s, fmt.Errorf("daemon: %w", err)
	}
	return s, nil
}

// openDoors builds and starts what serve runs for others beside the
// agent: the caller registry, the package table, the caller channel,
// desktop access and the admin API.
func (s *System) openDoors(ctx context.Context) (err error) {
	o := s.opts
	serve := func(ctx context.Context, c engine.Caller, st *transport.RPCStream) { s.Agent.Serve(ctx, c, st) }
	if s.Callers, err = callers.Open(&callers.Options{Dir: filepath.Join(o.Data, "acp"), Canceller: s.Engine, Clock: o.Clock, Logger: o.Logger,
		Usage: func(owner string) (int64, int, int) {
			u, eu := s.Quota.Usage(owner), s.Engine.Usage(owner)
			return u.Total, u.InWindow, eu.Running + eu.Queued
		}}); err != nil {
		return err
	}
	lookup := callerchan.Lookup(func(int) []callers.App { return nil })
	if o.Root != "" {
		if err := s.openApps(); err != nil {
			return err
		}
		lookup = callerchan.TableLookup(s.Apps)
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() { defer close(done); callerchan.FollowTable(fctx, s.Apps, s.Callers, s.Quota.Forget) }()
		s.stopFollow = func() { cancel(); <-done }
		if s.ACI != nil {
			actx, acancel := context.WithCancel(context.WithoutCancel(ctx))
			adone := make(chan struct{})
			go func() { defer close(adone); s.ACI.Follow(actx, s.Apps.Changed) }()
			s.stopACI = func() { acancel(); <-adone }
		}
	}
	if s.Caller, err = callerchan.New(&callerchan.Options{Name: o.Names.Caller(), Registry: s.Callers, Packages: lookup,
		RuntimeUID: os.Getuid(), Serve: serve, Logger: o.Logger}); err != nil {
		return err
	}
	if err := s.Caller.Start(ctx); err != nil {
		return err
	}
	if !o.AllowOwnUID {
		if s.Bridge, err = bridge.Open(&bridge.Options{Dir: filepath.Join(o.Data, "desktop"), Name: o.Names.ACP(),
			Serve: serve, Clock: o.Clock, Logger: o.Logger}); err != nil {
			return err
		}
	}
	if s.Console, err = console.New(&console.Options{Name: o.Names.Console(), Clock: o.Clock, Logger: o.Logger,
		Admin: console.AdminFunc(func(ctx context.Context, peer transport.Cred, method string, params any) (json.RawMessage, error) {
			return s.Admin.Invoke(ctx, peer, method, params)
		})}); err != nil {
		return err
	}
	s.Admin = admin.NewServer(&admin.Options{Name: o.Names.Admin(), Version: o.Version, Logger: o.Logger,
		Methods: s.adminMethods(), Status: s.statusSections(), Tasks: func() (int, int, bool) {
			st := s.Engine.Stats()
			return st.Running, st.Queued, s.Engine.SafeMode()
		}, SafeMode: newSafeModeSwitch(s.Engine, &o)})
	if err := s.Admin.Start(ctx); err != nil {
		return err
	}
	if err := s.Console.Start(ctx); err != nil {
		return err
	}
	if o.AllowOwnUID {
		// Last: once the ACP socket accepts, every other door answers
		// (tests wait for it, then use ctl).
		s.ACP = new(transport.Service)
		if err := s.ACP.Start(ctx, o.Names.ACP(), acpAdmit(s.Agent, uidGate(true), o.Logger)); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		s.log.Info("listening", "socket", o.Names.ACP())
	}
	return nil
}

// openApps opens the package table and the launcher's client, once
// (the ACI controller needs them before the broker, the caller channel
// after).
func (s *System) openApps() (err error) {
	if s.Apps != nil {
		return nil
	}
	o := s.opts
	if s.Apps, err = apps.OpenTable(supervise.RuntimeEnv{Root: o.Root}.AppsDir(), &apps.TableOptions{Logger: o.Logger}); err != nil {
		return err
	}
	s.Launcher = launcher.NewClient(launcher.SocketName(o.Names))
	return nil
}

// Close stops the runtime in the reverse order of Open: the doors close
// (connections end; tasks go on), new prompts are refused, running and
// queued tasks are cancelled and written as such (a task that does not
// stop in ShutdownWait stays running in the store and is recovered by
// the next start), the heartbeat says stopping, the extension host
// stops, and the store is closed. It closes what a failed Open built.
func (s *System) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownWait)
	defer cancel()
	var errs []error
	if s.ACP != nil {
		s.ACP.Close()
	}
	if s.Console != nil {
		s.Console.Close()
	}
	if s.Admin != nil {
		s.Admin.Close()
	}
	if s.Bridge != nil {
		s.Bridge.Close()
	}
	if s.Caller != nil {
		s.Caller.Close()
	}
	if s.stopACI != nil {
		s.stopACI()
	}
	if s.stopFollow != nil {
		s.stopFollow()
	}
	if s.Apps != nil {
		s.Apps.Close()
	}
	if s.Callers != nil {
		s.Callers.Close()
	}
	s.beat.close()
	if s.Engine != nil {
		st := s.Engine.Stats()
		s.beat.set(stateStopping, st.Running+st.Queued)
		errs = append(errs, s.Engine.Close(ctx))
	} else {
		s.beat.set(stateStopping, 0)
	}
	if s.Broker != nil {
		s.Broker.Close()
	}
	if s.Sessions != nil {
		s.Sessions.Close()
	}
	if s.Store != nil {
		errs = append(errs, s.Store.Close())
	}
	return errors.Join(errs...)
}

// Serve runs `agentosd serve` until ctx ends: it opens the System, calls
// ready (when not nil) with the socket that always listens — the ACP
// socket with AllowOwnUID, else the caller channel (desktop pairing
// listens only while desktop access is on) — and on ctx's end closes it.
func Serve(ctx context.Context, opts *Options, ready func(name string)) error {
	s, err := Open(ctx, opts)
	if err != nil {
		return err
	}
	if ready != nil {
		name := s.opts.Names.Caller()
		if s.ACP != nil {
			name = s.opts.Names.ACP()
		}
		ready(name)
	}
	<-ctx.Done()
	s.log.Info("stopping")
	return s.Close(ctx)
}
