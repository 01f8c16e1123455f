// Command acptestclient is the lab's generic caller app (package
// org.agentos.test.acp.client): `acptestclient run '<json operation>' …`
// performs a plan of caller-channel operations and prints every outcome
// as one JSON document. See package acptestclient.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

func main() {
	platform.Setup(nil)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Warnings go to stderr (the launcher keeps it); never message content.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	code := acptestclient.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, log)
	stop()
	os.Exit(code)
}
