// Command mcptest is the test plugin app's binary:
//
//	mcptest serve --server test   serve MCP on $AGENTOS_SOCKET (the launcher's contract)
//	mcptest mcp --stdio           serve MCP on stdin/stdout (MCP Inspector, any MCP client)
//	mcptest net [HOST]            what the process may do on the network (package netprobe);
//	                              app.json declares "permissions": ["network"]
//
// It exits 0 when stopped, 2 on a usage error and 1 on any other failure
// (the die tool ends it with 3).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/sampleapps/internal/netprobe"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
)

func main() {
	platform.Setup(nil)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

const help = `usage: mcptest serve --server test [--socket S] | mcptest mcp --stdio

The test plugin of AgentOS (spec §9.6): an MCP server with the tools echo,
slow, stats, add_tool, remove_tool, die and wipe, whose input schemas are
enforced.

  serve --server test   serve MCP on $AGENTOS_SOCKET (the runtime's launcher starts it)
  mcp --stdio           one MCP session on stdin/stdout (MCP Inspector, any MCP client);
                        every request read before the end of the input is answered

Exit codes: 0 stopped, 1 failed, 2 usage, 3 ended by the die tool.
`

func isHelp(s string) bool { return s == "--help" || s == "-h" || s == "-help" || s == "help" }

func run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, help)
		return 2
	}
	if isHelp(args[0]) || (len(args) > 1 && isHelp(args[1])) {
		fmt.Fprint(os.Stdout, help)
		return 0
	}
	// Warnings (a refused peer) go to stderr, which the launcher keeps in
	// the app's log file.
	app := mcptest.New(&mcptest.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	var err error
	switch args[0] {
	case netprobe.Command:
		return netprobe.Main(ctx, args[1:], os.Stdout, os.Stderr)
	case "serve":
		err = plugin.RunServe(ctx, app.Server(), args[1:])
	case "mcp":
		err = plugin.RunMCP(ctx, app.Server(), args[1:])
	default:
		err = &plugin.UsageError{Msg: fmt.Sprintf("unknown command %q", args[0])}
	}
	var ue *plugin.UsageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		return 2
	case err != nil:
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		return 1
	}
	return 0
}
