package plugin

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// UsageError is a command line RunServe or RunMCP cannot run.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// RunServe runs an app's `serve` command: `serve --server NAME [--socket S]`.
// The socket is --socket, else $AGENTOS_SOCKET (the launcher's contract).
// NAME must be the server's Info.Name (the launcher passes the app.json
// server; a mismatch is a packaging error). It serves until ctx ends and
// returns nil then.
func RunServe(ctx context.Context, s *Server, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.String("server", "", "the MCP server to serve")
	socket := fs.String("socket", "", "socket to listen on (default $"+EnvSocket+")")
	if err := fs.Parse(args); err != nil {
		return &UsageError{Msg: "serve: " + err.Error()}
	}
	if fs.NArg() > 0 {
		return &UsageError{Msg: "serve: unexpected arguments"}
	}
	if *server != "" && *server != s.info.Name {
		return &UsageError{Msg: fmt.Sprintf("serve: this app serves %q, not %q", s.info.Name, *server)}
	}
	name := *socket
	if name == "" {
		name = os.Getenv(EnvSocket)
	}
	if name == "" {
		return &UsageError{Msg: "serve: no socket: pass --socket or set " + EnvSocket}
	}
	ln, err := transport.Listen(name)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := s.ServeListener(ctx, ln); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// RunMCP runs an app's `mcp --stdio` command: one MCP session on stdin
// and stdout, until stdin ends or ctx ends.
func RunMCP(ctx context.Context, s *Server, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stdioFlag := fs.Bool("stdio", false, "serve MCP on stdin/stdout")
	if err := fs.Parse(args); err != nil {
		return &UsageError{Msg: "mcp: " + err.Error()}
	}
	if !*stdioFlag || fs.NArg() > 0 {
		return &UsageError{Msg: "mcp: usage: mcp --stdio"}
	}
	err := s.ServeStdio(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
