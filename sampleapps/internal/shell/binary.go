package shell

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// SystemDataEnv names the directory the launcher shares between every
// app of the device, for the simulated system services.
const SystemDataEnv = "AGENTOS_SYSTEM_DATA"

// Binary describes a sample app's binary.
type Binary struct {
	// Name is the app's short name (its Plugin constant).
	Name string
	// Server is the app's MCP server name, for the serve command.
	Server string
	// DebugCommands are the app's debug commands.
	DebugCommands []string
	// Open opens the app's store under dataDir with the binary's logger.
	Open func(ctx context.Context, dataDir string, logger *slog.Logger) (apptool.App, error)
}

// CLI is the binary's command line: the app's debug commands and, from
// Streams, serve and mcp; logger is the binary's (Logger).
func (b Binary) CLI(logger *slog.Logger) apptool.CLI {
	return apptool.CLI{
		Name: b.Name,
		Open: func(ctx context.Context, dataDir string) (apptool.App, error) {
			return b.Open(ctx, dataDir, logger)
		},
		DebugCommands: b.DebugCommands,
		Streams:       Streams(b.Server, logger),
	}
}

// Main runs the binary on the process's arguments, environment and
// standard streams, until SIGINT or SIGTERM cancels it, and exits with
// its exit code.
func Main(b Binary) {
	// Android's zone and temp folder before the app reads them.
	platform.Setup(nil)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := b.CLI(Logger()).Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Logger writes warnings and errors to stderr, which the launcher keeps
// in the app's log file.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Language turns a POSIX locale ("zh_CN.UTF-8", from $LANG) into a BCP 47
// tag ("zh-CN"); none, "C" and "POSIX" are "en".
func Language(posix string) string {
	lang, _, _ := strings.Cut(posix, ".")
	lang, _, _ = strings.Cut(lang, "@")
	if lang == "" || lang == "C" || lang == "POSIX" {
		return "en"
	}
	return strings.ReplaceAll(lang, "_", "-")
}
