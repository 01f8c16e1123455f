package main

import (
	"context"
	"io"
	"os"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/daemon"
)

// ctlCmd runs the owner's control commands against a running runtime,
// over the runtime's whole verb table.
func ctlCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return admin.Ctl(ctx, daemon.CtlVerbs(), args, admin.CtlIO{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr})
}
