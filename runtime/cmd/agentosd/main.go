// Command agentosd is the AgentOS runtime: one binary for the runtime
// (serve), editors and tests (stdio), the root supervisor (supervise), the
// owner's control commands (ctl) and version. main only wires: each
// subcommand is one file calling into its package.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/platform"
)

// version is stamped at build time (-X main.version=...).
var version = "dev"

// testTools, when set by a test build (tag agentosd_testtools), is the
// tool layer of serve and stdio.
var testTools engine.Tools

func main() {
	// Android's DNS, zone and temp folder before anything uses them.
	platform.Setup(nil)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := Run(ctx, os.Args[1:])
	stop()
	var ee exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		os.Exit(int(ee))
	default:
		fmt.Fprintf(os.Stderr, "agentosd: %v\n", err)
		os.Exit(1)
	}
}

// exitError carries a subcommand's exit code.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// commands are the subcommands, by name.
var commands = map[string]func(ctx context.Context, args []string) error{
	"ctl":       ctlCmd,
	"platform":  platformCmd,
	"serve":     serveCmd,
	"stdio":     stdioCmd,
	"supervise": superviseCmd,
	"version":   printVersion,
}

// Run runs one subcommand.
func Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		usage(os.Stderr)
		return exitError(2)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "agentosd: unknown command %q\n", args[0])
		usage(os.Stderr)
		return exitError(2)
	}
	return cmd(ctx, args[1:])
}

// summaries describe the subcommands for usage; a command registered
// elsewhere without one is still listed.
var summaries = map[string]string{
	"serve":     "run the runtime: ACP for desktops, apps and the owner (--data DIR [--socket-prefix P])",
	"stdio":     "ACP on stdin/stdout as the desktop caller (--data DIR)",
	"supervise": "the root supervisor that starts and guards serve",
	"ctl":       "the owner's control commands (agentosd ctl --help)",
	"app":       "make and check signed app bundles (keygen|pack|sign|verify)",
	"platform":  "what the binary finds on this system: Android, zone, DNS, temp folder (--lookup H, --fetch URL, --as-runtime)",
	"module":    "pack the Magisk/KernelSU module",
	"version":   "print the version",
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: agentosd <command> [flags]")
	fmt.Fprintln(w)
	names := slices.Sorted(maps.Keys(commands))
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, summaries[n])
	}
}

// logger writes text logs to stderr; it never sees prompts or keys.
func logger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}
