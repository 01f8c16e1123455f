package main

import (
	"context"
	"io"

	"github.com/agentoslab/agentlab/runtime/apps/bundlecli"
)

// appCmd is `agentosd app keygen|pack|sign|verify`: make and check signed
// app bundles locally (`agentosd ctl app …` talks to a running runtime).
func appCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return bundlecli.Main(ctx, args, stdout, stderr)
}
