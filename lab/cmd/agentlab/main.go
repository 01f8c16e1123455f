// Command agentlab is the device lab for the AgentOS runtime: it builds
// the runtime and the sample apps, provisions phones, emulators and
// virtual devices, runs YAML scenarios and writes reports. See
// `agentlab --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/lab/cli"
)

func main() {
	// This binary is re-executed as a virtual device's init and tools:
	// that must happen before anything else.
	virtual.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Run(ctx, os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
