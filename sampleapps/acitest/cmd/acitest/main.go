// Command acitest is the ACI test app's binary: `acitest serve --server
// acitest` serves its capabilities on $AGENTOS_SOCKET.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/sdk/aci"
	"github.com/agentoslab/agentlab/sampleapps/acitest"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: acitest serve --server acitest")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := acitest.New(nil)
	if err == nil {
		err = aci.RunServe(ctx, srv, os.Args[2:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "acitest:", err)
		os.Exit(1)
	}
}
