// Command agentosd is the AgentOS runtime: one binary for the runtime
// (serve), editors and tests (stdio), the extension host (ext), the root
// supervisor (supervise), the owner's control commands (ctl), app bundles
// (app), the root manager's module (module) and version. main only
// wires: the command table below names every subcommand, each a call
// into its package; nothing registers itself.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/platform"
)

// version is stamped at build time (-X main.version=...).
var version = "dev"

func main() {
	// Android's DNS, zone and temp folder before anything uses them.
	platform.Setup(nil)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand. run returns the exit code; it writes its
// usage to stderr on a bad command line.
type command struct {
	name     string
	synopsis string
	summary  string
	run      func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is the command table, in the order `agentosd --help` lists it.
func commands() []command {
	return []command{
		{"serve", "--data DIR [--socket-prefix P] [flags]", "run the runtime: ACP for desktops, apps and the owner", serveCmd},
		{"stdio", "--data DIR [--model-script FILE | --model scripted] [flags]", "ACP on stdin/stdout as the desktop caller (editors, tests)", stdioCmd},
		{"ctl", "<command> [args] [--json]", "the owner's control commands to a running runtime (agentosd ctl --help)", ctlCmd},
		{"supervise", "[--root DIR] [flags] [-- RUNTIME COMMAND]", "the root supervisor that starts and guards serve", superviseCmd},
		{"ext", "--data DIR --apps DIR [flags]", "the extension host that serve starts and watches (plugins, MCP providers, skills)", extCmd},
		{"app", "keygen|pack|sign|verify ...", "make and check signed app bundles", appCmd},
		{"module", "pack [flags]", "pack the Magisk/KernelSU module", moduleCmd},
		{"platform", "[--lookup HOST] [--fetch URL] [--as-runtime]", "what the binary finds on this system: Android, zone, DNS, temp folder", platformCmd},
		{"version", "", "print the version", versionCmd},
		{"help", "[COMMAND]", "show this help, or a command's", nil},
	}
}

// Run runs one subcommand and returns the process's exit code: 0, 1 for
// a failure, 2 for a bad command line (a subcommand may return its own).
// --help (or -h) asks for help: agentosd's, or a command's, on stdout
// with exit 0.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "help":
		if len(rest) == 0 {
			usage(stdout)
			return 0
		}
		name, rest = rest[0], []string{"--help"}
	}
	cmds := commands()
	i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name && c.run != nil })
	if i < 0 {
		fmt.Fprintf(stderr, "agentosd: unknown command %q\n", name)
		usage(stderr)
		return 2
	}
	c := cmds[i]
	if name != "ctl" && wantsHelp(rest) {
		// Every subcommand prints its usage where it reports a bad command
		// line; asked for, the usage is the answer: stdout, exit 0.
		fmt.Fprintf(stdout, "agentosd %s: %s\n\n", c.name, c.summary)
		c.run(ctx, rest, stdout, stdout)
		return 0
	}
	return c.run(ctx, rest, stdout, stderr)
}

// wantsHelp reports -h or --help among args before a "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "agentosd: the AgentOS runtime")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: agentosd <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		if c.synopsis != "" {
			fmt.Fprintf(w, "  %-10s   agentosd %s %s\n", "", c.name, c.synopsis)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "agentosd <command> --help shows a command's flags.")
}

// logger writes text logs to stderr; it never sees prompts or keys.
func logger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func versionCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--help" {
		fmt.Fprintln(stdout, "usage: agentosd version")
		return 0
	}
	fmt.Fprintln(stdout, version)
	return 0
}
