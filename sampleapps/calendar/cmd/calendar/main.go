// Command calendar is the sample calendar app's binary:
//
//	calendar [--data DIR] <command> [args]
//
// DIR defaults to $AGENTOS_APP_DATA. The simulated calendar provider,
// shared by every app of the device, lives in $AGENTOS_SYSTEM_DATA
// (default DIR/system). It prints one JSON document and exits 0 (ok), 1
// (the command failed) or 2 (usage).
// Commands: dump, reset, clear, seed, set permission granted|denied,
// tool <name> ['<json>'].
//
// Two more commands come from the provider SDK and print no JSON (stdout
// may be the protocol): serve --server calendar serves the app's tools over
// MCP on $AGENTOS_SOCKET (the launcher starts it as the app's uid), and
// mcp --stdio serves them on stdin/stdout for the MCP Inspector or any
// other MCP client.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/internal/shell"
)

// SystemEnv names the directory shared by every app of the device.
const SystemEnv = "AGENTOS_SYSTEM_DATA"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli().Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func cli() apptool.CLI {
	return apptool.CLI{
		Name:          calendar.Plugin,
		Open:          open,
		DebugCommands: calendar.DebugCommands,
		Streams:       shell.Streams(calendar.Server, logger()),
	}
}

func open(ctx context.Context, dataDir string) (apptool.App, error) {
	return calendar.Open(ctx, dataDir, &calendar.Options{
		Location:  apptool.DeviceLocation(),
		SystemDir: os.Getenv(SystemEnv),
		Logger:    logger(),
	})
}

// logger writes warnings and errors to stderr (the launcher keeps it in
// the app's log file).
func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
