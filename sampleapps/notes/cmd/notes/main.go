// Command notes is the sample notes app's binary:
//
//	notes [--data DIR] <command> [args]
//
// DIR defaults to $AGENTOS_APP_DATA. It prints one JSON document and exits
// 0 (ok), 1 (the command failed) or 2 (usage). Commands: dump, reset, seed,
// tool <name> '<json>', raw_prompt '<json>', ask_agent '<json>',
// ask_agent_status, ask_agent_stop.
//
// ask_agent runs a round through the caller SDK against the runtime whose
// caller socket $AGENTOS_CALLER_SOCKET names (the launcher sets it), until
// the round ends: run it with a timeout above 150 s (`agentosd ctl app run
// --timeout 180s org.agentos.sample.notes -- ask_agent '{"note_id":1}'`).
//
// Two more commands come from the provider SDK and print no JSON (stdout
// may be the protocol): serve --server notes serves the app's tools over
// MCP on $AGENTOS_SOCKET (the launcher starts it as the app's uid), and
// mcp --stdio serves them on stdin/stdout for the MCP Inspector or any
// other MCP client.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/gateway"
	"github.com/agentoslab/agentlab/sampleapps/internal/shell"
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

func main() {
	shell.Main(shell.Binary{
		Name: notes.Plugin, Server: notes.Server, DebugCommands: notes.DebugCommands,
		Open: func(ctx context.Context, dataDir string, logger *slog.Logger) (apptool.App, error) {
			return notes.Open(ctx, dataDir, &notes.Options{
				Location: apptool.DeviceLocation(),
				Language: shell.Language(os.Getenv("LANG")),
				Logger:   logger,
				// The caller SDK shell: ask_agent reaches the runtime that
				// launched the app through $AGENTOS_CALLER_SOCKET.
				Agent: gateway.FromEnv(os.Getenv, logger),
			})
		},
	})
}
