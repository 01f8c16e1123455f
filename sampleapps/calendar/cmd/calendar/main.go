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
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
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
		// The provider SDK adds "serve" and "mcp" here.
		Commands: map[string]apptool.Command{},
	}
}

func open(ctx context.Context, dataDir string) (apptool.App, error) {
	return calendar.Open(ctx, dataDir, &calendar.Options{
		Location:  apptool.DeviceLocation(),
		SystemDir: os.Getenv(SystemEnv),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}
