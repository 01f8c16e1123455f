package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/daemon"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/providers"
	"github.com/agentoslab/agentlab/runtime/modelconf"
	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Options say what serve was started with beyond daemon.Options.
type Options struct {
	// Root is the supervisor's root (supervise.RuntimeEnv.Root). Without
	// it there is no package table: every app uid is refused not_open on
	// the caller channel (nothing identifies it), and app methods of the
	// admin API answer busy.
	Root string
	// Admin, when set, is called with the admin server before it starts,
	// so another part of serve can provide its backend (the extension
	// host's broker) to its own admin methods.
	Admin func(*admin.Server)
}

// Configure sets the engine hooks and Attach in o, which daemon.Serve then
// uses. It reads the model configuration now. With o.AllowOwnUID (a
// test mode of the core) desktop pairing is left out and serve keeps its
// own uid-gated ACP listener.
func Configure(o *daemon.Options, ao Options) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fallback, err := startupKey(o)
	if err != nil {
		// Named without the key; the owner can still set one.
		log.Warn("access: model key not read", "err", err)
	}
	ms, err := modelconf.Open(o.Data, &modelconf.Options{FallbackKey: fallback, Providers: &providers.Options{Clock: o.Clock}, Logger: log})
	if err != nil {
		return fmt.Errorf("access: %w", err)
	}
	q := quota.New(&quota.Options{Clock: o.Clock, Logger: log})
	o.Models = ms
	o.Admission = q
	desktop := !o.AllowOwnUID
	o.Attach = func(ctx context.Context, r *daemon.Runtime) (func(), bool, error) {
		stop, err := attach(ctx, r, o, ao, ms, q, desktop, log)
		return stop, desktop, err
	}
	return nil
}

// startupKey is a key given at start: --model-key-file, else
// $AGENTOS_MODEL_KEY (removed from the environment once read).
func startupKey(o *daemon.Options) (string, error) {
	if o.ModelKeyFile != "" {
		return model.KeyFromFile(o.ModelKeyFile)
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, ok := lookup(daemon.ModelKeyEnv)
	if !ok {
		return "", nil
	}
	os.Unsetenv(daemon.ModelKeyEnv)
	k, err := model.KeyFromReader(strings.NewReader(v))
	if errors.Is(err, model.ErrNoKey) {
		return "", nil
	}
	return k, err
}

func attach(ctx context.Context, r *daemon.Runtime, o *daemon.Options, ao Options, ms *modelconf.Store,
	q *quota.Quota, desktop bool, log *slog.Logger) (func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (func(), error) {
		stop()
		return nil, fmt.Errorf("access: %w", err)
	}
	serve := func(ctx context.Context, c engine.Caller, s *transport.RPCStream) { r.Agent.Serve(ctx, c, s) }

	reg, err := callers.Open(&callers.Options{Dir: filepath.Join(o.Data, "acp"), Canceller: r.Engine, Clock: o.Clock, Logger: log,
		Usage: func(owner string) (int64, int, int) {
			u, eu := q.Usage(owner), r.Engine.Usage(owner)
			return u.Total, u.InWindow, eu.Running + eu.Queued
		}})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() { reg.Close() })

	adm := admin.NewServer(&admin.Options{Name: o.Names.Admin(), Version: o.Version, Logger: log})
	lookup := callerchan.Lookup(func(int) []callers.App { return nil })
	if ao.Root != "" {
		table, err := admin.AttachApps(adm, ao.Root, o.Names, log)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, func() { table.Close() })
		lookup = callerchan.TableLookup(table)
		fctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); callerchan.FollowTable(fctx, table, reg, q.Forget) }()
		stops = append(stops, func() { cancel(); <-done })
		admin.Provide[*apps.Table](adm, table)
	}

	cs, err := callerchan.New(&callerchan.Options{Name: o.Names.Caller(), Registry: reg, Packages: lookup,
		RuntimeUID: os.Getuid(), Serve: serve, Logger: log})
	if err != nil {
		return fail(err)
	}
	if err := cs.Start(ctx); err != nil {
		return fail(err)
	}
	stops = append(stops, func() { cs.Close() })

	if desktop {
		br, err := bridge.Open(&bridge.Options{Dir: filepath.Join(o.Data, "desktop"), Name: o.Names.ACP(), Serve: serve, Clock: o.Clock, Logger: log})
		if err != nil {
			return fail(err)
		}
		stops = append(stops, func() { br.Close() })
		admin.Provide(adm, br)
		adm.AddStatusSection(admin.StatusSection{Name: "desktop", Read: func(context.Context) (any, error) {
			st := br.Status()
			st.Closes = nil
			return st, nil
		}})
	}
	admin.Provide(adm, reg)
	admin.Provide(adm, cs)
	admin.Provide(adm, ms)
	admin.Provide(adm, admin.Tasks(func() (int, int, bool) {
		st := r.Engine.Stats()
		return st.Running, st.Queued, r.Engine.SafeMode()
	}))
	adm.AddStatusSection(admin.StatusSection{Name: "callers", Read: func(context.Context) (any, error) {
		snap := reg.List()
		return map[string]any{"channels": cs.Stats(), "remembered": len(snap.Callers), "waiting": len(snap.Cards), "health": snap.Health}, nil
	}})
	adm.AddStatusSection(admin.StatusSection{Name: "model", Read: func(context.Context) (any, error) { return ms.Show(), nil }})
	if ao.Admin != nil {
		ao.Admin(adm)
	}
	if err := adm.Start(ctx); err != nil {
		return fail(err)
	}
	stops = append(stops, func() { adm.Close() })
	return stop, nil
}
