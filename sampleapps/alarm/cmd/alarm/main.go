// Command alarm is the sample alarm app's binary:
//
//	alarm [--data DIR] <command> [args]
//
// DIR defaults to $AGENTOS_APP_DATA. The device's shared system alarm
// clock lives in $AGENTOS_SYSTEM_DATA (default DIR/system). It prints one
// JSON document and exits 0 (ok), 1 (the command failed) or 2 (usage).
// Commands: dump ['{"offset":N,"limit":M}'], reset, seed,
// tool <name> ['<json>'], ring <id>.
//
// Two more commands come from the provider SDK and print no JSON (stdout
// may be the protocol): serve --server alarm serves the app's tools over
// MCP on $AGENTOS_SOCKET (the launcher starts it as the app's uid), and
// mcp --stdio serves them on stdin/stdout for the MCP Inspector or any
// other MCP client.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/shell"
)

func main() {
	shell.Main(shell.Binary{
		Name: alarm.Plugin, Server: alarm.Server, DebugCommands: alarm.DebugCommands,
		Open: func(ctx context.Context, dataDir string, logger *slog.Logger) (apptool.App, error) {
			return alarm.Open(ctx, dataDir, &alarm.Options{
				Location:  apptool.DeviceLocation(),
				SystemDir: os.Getenv(shell.SystemDataEnv),
				Logger:    logger,
			})
		},
	})
}
