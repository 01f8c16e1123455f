package main

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/agentoslab/agentlab/runtime/access"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/daemon"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/ext/host"
	"github.com/agentoslab/agentlab/runtime/ext/sessionmcp"
	"github.com/agentoslab/agentlab/runtime/supervise"
)

// `agentosd ext`: the extension host, a separate process that serve
// starts and watches (its death never stops serve).
func init() {
	commands["ext"] = extCmd
	summaries["ext"] = "the extension host that serve starts and watches (plugins, MCP providers, skills)"
}

func extCmd(ctx context.Context, args []string) error {
	if code := host.Main(ctx, args, os.Stderr); code != 0 {
		return exitError(code)
	}
	return nil
}

// ExtFlagsEnv passes extra `agentosd ext` flags through serve (space
// separated, e.g. "--idle-timeout 2s"). A test knob, not a stable
// interface.
const ExtFlagsEnv = "AGENTOS_EXT_FLAGS"

// configureExt wires the extension host into serve: the broker becomes
// the engine's tool layer, the session MCP manager the ACP layer's
// caller-supplied servers, and the broker the backend of the admin
// methods; the broker starts `agentosd ext` now. A build with test tools
// keeps them and runs no extension host. The returned stop ends it.
func configureExt(ctx context.Context, opts *daemon.Options, ao *access.Options, root string, log *slog.Logger) (stop func(), err error) {
	if opts.Tools != nil {
		return func() {}, nil
	}
	sessions := sessionmcp.New(&sessionmcp.Options{Clock: opts.Clock, Logger: log})
	b := broker.New(broker.Options{
		Names:     opts.Names,
		DataDir:   opts.Data,
		AppsDir:   supervise.RuntimeEnv{Root: root}.AppsDir(),
		ExtFlags:  strings.Fields(os.Getenv(ExtFlagsEnv)),
		ExtStderr: os.Stderr,
		Sessions:  sessions,
		Clock:     opts.Clock,
		Logger:    log,
	})
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	opts.Tools = b
	opts.Servers = sessions
	stop = func() {
		b.Close()
		sessions.Close()
	}
	prev := ao.Admin
	ao.Admin = func(srv *admin.Server) {
		admin.Provide(srv, b)
		if prev != nil {
			prev(srv)
		}
	}
	return stop, nil
}
