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

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/internal/shell"
)

func main() {
	shell.Main(shell.Binary{
		Name: calendar.Plugin, Server: calendar.Server, DebugCommands: calendar.DebugCommands,
		Open: func(ctx context.Context, dataDir string, logger *slog.Logger) (apptool.App, error) {
			return calendar.Open(ctx, dataDir, &calendar.Options{
				Location:  apptool.DeviceLocation(),
				SystemDir: os.Getenv(shell.SystemDataEnv),
				Logger:    logger,
			})
		},
	})
}
