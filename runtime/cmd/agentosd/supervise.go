package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/supervise"
)

// superviseCmd runs the root supervisor; SIGUSR1 kicks a stopped runtime.
func superviseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	kick := make(chan os.Signal, 1)
	signal.Notify(kick, syscall.SIGUSR1)
	defer signal.Stop(kick)
	kicks := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-kick:
				select {
				case kicks <- struct{}{}:
				default:
				}
			case <-done:
				return
			}
		}
	}()
	return supervise.Main(ctx, args, supervise.CLI{Stderr: stderr, Kick: kicks})
}
