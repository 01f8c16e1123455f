// Command vdevice starts, stops, lists and resets virtual devices; the
// same commands are mounted in the lab as "agentlab vdevice".
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/devices/virtual/cli"
)

func main() {
	virtual.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := cli.NewCommand().ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}
