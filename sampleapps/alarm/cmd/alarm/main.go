// Command alarm is the sample alarm app's binary:
//
//	alarm [--data DIR] <command> [args]
//
// DIR defaults to $AGENTOS_APP_DATA. The device's shared system alarm
// clock lives in $AGENTOS_SYSTEM_DATA (default DIR/system). It prints one
// JSON document and exits 0 (ok), 1 (the command failed) or 2 (usage).
// Commands: dump ['{"offset":N,"limit":M}'], reset, seed,
// tool <name> ['<json>'], ring <id>.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
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
		Name:          alarm.Plugin,
		Open:          open,
		DebugCommands: alarm.DebugCommands,
		// The provider SDK adds "serve" and "mcp" here.
		Commands: map[string]apptool.Command{},
	}
}

func open(ctx context.Context, dataDir string) (apptool.App, error) {
	return alarm.Open(ctx, dataDir, &alarm.Options{
		Location:  apptool.DeviceLocation(),
		SystemDir: os.Getenv(SystemEnv),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}
