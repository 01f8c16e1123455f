package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
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
	// The lab's build follows serve's virtual clock (restart backoff, the
	// crash-loop window); a release build gets the real one.
	follow := func(runtimeData string, log *slog.Logger) (clock.Clock, func()) {
		f := labclock.Follow(runtimeData, log)
		return f.Clock(), f.Close
	}
	return supervise.Main(ctx, args, supervise.CLI{Stdout: stdout, Stderr: stderr, Kick: kicks, Clock: follow})
}
