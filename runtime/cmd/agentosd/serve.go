package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/daemon"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// ExtFlagsEnv passes extra `agentosd ext` flags through serve (space
// separated, e.g. "--idle-timeout 2s"). A test knob, not a stable
// interface.
const ExtFlagsEnv = "AGENTOS_EXT_FLAGS"

// serveCmd runs the runtime until SIGTERM.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentosd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "data directory (required)")
	prefix := fs.String("socket-prefix", "", "socket-name prefix, so several runtimes share a host")
	keyFile := fs.String("model-key-file", "", "file holding the model key (mode 0600)")
	ownUID := fs.Bool("allow-own-uid", false, "serve ACP uid-gated, also to the runtime's own uid, instead of desktop pairing (tests)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *data == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "agentosd serve: --data DIR is required and no arguments are taken")
		fs.Usage()
		return 2
	}
	log, err := logger(stderr, *level)
	if err != nil {
		fmt.Fprintf(stderr, "agentosd serve: %v\n", err)
		return 2
	}
	env := supervise.FromEnv(os.Getenv)
	// One clock for every part of serve: virtual in the lab's build
	// (ctl clock advance), the real clock in a release build.
	clk, err := labclock.Open(*data)
	if err != nil {
		fmt.Fprintf(stderr, "agentosd serve: %v\n", err)
		return 1
	}
	err = daemon.Serve(ctx, &daemon.Options{
		Data: *data, Version: version, Names: transport.Names{Prefix: *prefix}, Root: env.Root, ModelKeyFile: *keyFile,
		Tools: testTools(), ExtFlags: strings.Fields(os.Getenv(ExtFlagsEnv)), ExtStderr: stderr,
		AllowOwnUID: *ownUID, SafeMode: env.SafeMode, Clock: clk.Clock(), Labclock: clk, Logger: log,
	}, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentosd serve: %v\n", err)
		return 1
	}
	return 0
}
