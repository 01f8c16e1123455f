// Package shell is the sample apps' provider SDK shell: the two commands
// every sample app's binary gains from runtime/sdk/plugin,
//
//	<app> [--data DIR] serve --server <server>   the MCP service on $AGENTOS_SOCKET (started by the launcher)
//	<app> [--data DIR] mcp --stdio               one MCP session on stdin/stdout (MCP Inspector, any MCP client)
//
// Both register the opened app's Tools() with plugin.AddAppTools and
// apptool.Run, so the SDK-free tool layer is all an app writes.
//
// Main is the rest of every app's main: a Binary names the app and how to
// open it, and Main runs its command line with the binary's logger until
// SIGINT or SIGTERM.
package shell

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Streams returns the serve and mcp commands for apptool.CLI.Streams.
// server is the app's MCP server name (plugin.json's mcpServers key and
// app.json's services[].server). logger receives the SDK's connection and
// protocol problems (never arguments or results); nil discards.
func Streams(server string, logger *slog.Logger) map[string]apptool.Command {
	return map[string]apptool.Command{
		"serve": func(ctx context.Context, app apptool.App, args []string) (any, error) {
			s, err := newServer(server, app, logger)
			if err != nil {
				return nil, err
			}
			return nil, usage(plugin.RunServe(ctx, s, args))
		},
		"mcp": func(ctx context.Context, app apptool.App, args []string) (any, error) {
			s, err := newServer(server, app, logger)
			if err != nil {
				return nil, err
			}
			return nil, usage(plugin.RunMCP(ctx, s, args))
		},
	}
}

func newServer(server string, app apptool.App, logger *slog.Logger) (*plugin.Server, error) {
	s := plugin.NewServer(plugin.Info{Name: server}, &plugin.Options{Logger: logger})
	if err := plugin.AddAppTools(s, app.Tools(), apptool.Run); err != nil {
		return nil, err
	}
	return s, nil
}

// usage turns the SDK's usage errors into the CLI's, so a bad command
// line exits 2 like every other usage error of the binary.
func usage(err error) error {
	var ue *plugin.UsageError
	if errors.As(err, &ue) {
		return &apptool.UsageError{Msg: ue.Msg}
	}
	return err
}
