package main

import (
	"context"
	"io"

	"github.com/agentoslab/agentlab/runtime/ext/host"
)

// extCmd is `agentosd ext`: the extension host, a separate process that
// serve starts and watches (its death never stops serve).
func extCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return host.Main(ctx, args, stderr)
}
