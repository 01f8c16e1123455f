package main

import (
	"context"
	"os"

	"github.com/agentoslab/agentlab/runtime/apps/bundlecli"
)

// `agentosd app keygen|pack|sign|verify`: make and check signed app
// bundles locally (`agentosd ctl app …` talks to a running runtime).
func init() { commands["app"] = appCmd }

func appCmd(ctx context.Context, args []string) error {
	if code := bundlecli.Main(ctx, args, os.Stdout, os.Stderr); code != 0 {
		return exitError(code)
	}
	return nil
}
