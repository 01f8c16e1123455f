package main

import (
	"context"
	"os"

	"github.com/agentoslab/agentlab/runtime/admin"
)

// ctlCmd runs the owner's control commands against a running runtime.
func ctlCmd(ctx context.Context, args []string) error {
	if code := admin.Ctl(ctx, args, admin.CtlIO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}); code != 0 {
		return exitError(code)
	}
	return nil
}
