package main

import (
	"context"
	"flag"
	"os"

	"github.com/agentoslab/agentlab/runtime/access"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/daemon"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// serveCmd runs the runtime until SIGTERM.
func serveCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	data := fs.String("data", "", "data directory (required)")
	prefix := fs.String("socket-prefix", "", "socket-name prefix, so several runtimes share a host")
	keyFile := fs.String("model-key-file", "", "file holding the model key (mode 0600)")
	ownUID := fs.Bool("allow-own-uid", false, "also admit the runtime's own uid on the ACP socket (tests)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if *data == "" {
		fs.Usage()
		return exitError(2)
	}
	log, err := logger(*level)
	if err != nil {
		return err
	}
	env := supervise.FromEnv(os.Getenv)
	// One clock for every part of serve: virtual in the lab's build
	// (ctl clock advance), the real clock in a release build.
	clk, err := labclock.Open(*data)
	if err != nil {
		return err
	}
	opts := &daemon.Options{
		Data: *data, Version: version, Names: transport.Names{Prefix: *prefix}, ModelKeyFile: *keyFile,
		Tools: testTools, AllowOwnUID: *ownUID, SafeMode: env.SafeMode, Clock: clk.Clock(), Logger: log,
	}
	// The extension host (tools, caller-supplied MCP servers, its admin
	// methods), then quotas, the owner's model settings, the admin API,
	// the caller channel and desktop pairing.
	ao := access.Options{Root: env.Root, Admin: func(srv *admin.Server) { admin.Provide(srv, clk) }}
	stopExt, err := configureExt(ctx, opts, &ao, env.Root, log)
	if err != nil {
		return err
	}
	defer stopExt()
	if err := access.Configure(opts, ao); err != nil {
		return err
	}
	return daemon.Serve(ctx, opts, nil)
}
