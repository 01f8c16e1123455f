// Command notes is the sample notes app's binary:
//
//	notes [--data DIR] <command> [args]
//
// DIR defaults to $AGENTOS_APP_DATA. It prints one JSON document and exits
// 0 (ok), 1 (the command failed) or 2 (usage). Commands: dump, reset, seed,
// tool <name> '<json>', raw_prompt '<json>', ask_agent '<json>'.
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
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/shell"
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli().Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func cli() apptool.CLI {
	return apptool.CLI{
		Name:          notes.Plugin,
		Open:          open,
		DebugCommands: notes.DebugCommands,
		Streams:       shell.Streams(notes.Server, logger()),
	}
}

func open(ctx context.Context, dataDir string) (apptool.App, error) {
	return notes.Open(ctx, dataDir, &notes.Options{
		Location: apptool.DeviceLocation(),
		Language: deviceLanguage(os.Getenv("LANG")),
		Logger:   logger(),
		Agent:    newAgent(),
	})
}

// newAgent is where the caller SDK shell plugs in the AgentOS connection
// for ask_agent. This build has none, so ask_agent says so.
func newAgent() notes.Agent { return nil }

// deviceLanguage turns a POSIX locale ("zh_CN.UTF-8") into a BCP 47 tag.
func deviceLanguage(lang string) string {
	lang, _, _ = strings.Cut(lang, ".")
	lang, _, _ = strings.Cut(lang, "@")
	if lang == "" || lang == "C" || lang == "POSIX" {
		return "en"
	}
	return strings.ReplaceAll(lang, "_", "-")
}

// logger writes warnings and errors to stderr (the launcher keeps it in
// the app's log file).
func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
