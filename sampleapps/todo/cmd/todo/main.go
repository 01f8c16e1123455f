// Command todo is the sample to-do app's binary:
//
//	todo [--data DIR] <command> [args]
//
// DIR defaults to $AGENTOS_APP_DATA. It prints one JSON document and exits
// 0 (ok), 1 (the command failed) or 2 (usage). Commands: dump, reset,
// seed, tool <name> ['<json>'].
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/todo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli().Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func cli() apptool.CLI {
	return apptool.CLI{
		Name:          todo.Plugin,
		Open:          open,
		DebugCommands: todo.DebugCommands,
		// The provider SDK adds "serve" and "mcp" here.
		Commands: map[string]apptool.Command{},
	}
}

func open(ctx context.Context, dataDir string) (apptool.App, error) {
	return todo.Open(ctx, dataDir, &todo.Options{
		Location: apptool.DeviceLocation(),
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}
