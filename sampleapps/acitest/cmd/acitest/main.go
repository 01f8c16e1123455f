// Command acitest is the ACI test app's binary: `acitest serve --server
// acitest` serves its capabilities on $AGENTOS_SOCKET; `--server raw` the
// raw server, written without the SDK.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
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
	var err error
	if slices.Equal(os.Args[2:], []string{"--server", acitest.RawName}) {
		err = acitest.ServeRaw(ctx, os.Getenv(aci.EnvSocket))
	} else {
		var srv *aci.Server
		if srv, err = acitest.New(nil); err == nil {
			err = aci.RunServe(ctx, srv, os.Args[2:])
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "acitest:", err)
		os.Exit(1)
	}
}
