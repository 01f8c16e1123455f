package main

import (
	"context"
	"os"

	"github.com/agentoslab/agentlab/runtime/module"
)

// `agentosd module pack`: build the Magisk/KernelSU module zip.
func init() { commands["module"] = moduleCmd }

func moduleCmd(ctx context.Context, args []string) error {
	if code := module.Main(ctx, args, os.Stdout, os.Stderr); code != 0 {
		return exitError(code)
	}
	return nil
}
