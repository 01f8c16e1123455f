package aci

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

// UsageError is a command line RunServe cannot run.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// RunServe runs an app's `serve` command: `serve --server NAME [--socket S]`.
// The socket is --socket, else $AGENTOS_SOCKET (the launcher's contract:
// transport.Names.ACI(package, service)). NAME must be the server's name
// (the launcher passes app.json's service; a mismatch is a packaging
// error). It serves until ctx ends and returns nil then.
func RunServe(ctx context.Context, s *Server, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.String("server", "", "the ACI service to serve")
	socket := fs.String("socket", "", "socket to listen on (default $"+EnvSocket+")")
	if err := fs.Parse(args); err != nil {
		return &UsageError{Msg: "serve: " + err.Error()}
	}
	if fs.NArg() > 0 {
		return &UsageError{Msg: "serve: unexpected arguments"}
	}
	if *server != "" && *server != s.name {
		return &UsageError{Msg: fmt.Sprintf("serve: this app serves %q, not %q", s.name, *server)}
	}
	name := *socket
	if name == "" {
		name = os.Getenv(EnvSocket)
	}
	if name == "" {
		return &UsageError{Msg: "serve: no socket: pass --socket or set " + EnvSocket}
	}
	if err := s.ServeName(ctx, name); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
