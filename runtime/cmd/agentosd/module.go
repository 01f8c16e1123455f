package main

import (
	"context"
	"io"

	"github.com/agentoslab/agentlab/runtime/module"
)

// moduleCmd is `agentosd module pack`: build the Magisk/KernelSU module zip.
func moduleCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return module.Main(ctx, args, stdout, stderr)
}
