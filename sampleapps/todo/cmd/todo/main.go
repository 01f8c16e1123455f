// Command todo is the sample to-do app's binary:
//
//	todo [--data DIR] <command> [args]
//
// DIR defaults to $AGENTOS_APP_DATA. It prints one JSON document and exits
// 0 (ok), 1 (the command failed) or 2 (usage). Commands: dump, reset,
// seed, tool <name> ['<json>'].
//
// Two more commands come from the provider SDK and print no JSON (stdout
// may be the protocol): serve --server todo serves the app's tools over
// MCP on $AGENTOS_SOCKET (the launcher starts it as the app's uid), and
// mcp --stdio serves them on stdin/stdout for the MCP Inspector or any
// other MCP client.
package main

import (
	"context"
	"log/slog"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/shell"
	"github.com/agentoslab/agentlab/sampleapps/todo"
)

func main() {
	shell.Main(shell.Binary{
		Name: todo.Plugin, Server: todo.Server, DebugCommands: todo.DebugCommands,
		Open: func(ctx context.Context, dataDir string, logger *slog.Logger) (apptool.App, error) {
			return todo.Open(ctx, dataDir, &todo.Options{
				Location: apptool.DeviceLocation(),
				Logger:   logger,
			})
		},
	})
}
