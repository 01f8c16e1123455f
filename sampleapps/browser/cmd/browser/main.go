// Command browser is the sample controlled app's binary:
//
//	browser [--data DIR] <command> [args]
//
// serve --server browser serves the browser's capabilities over ACI on
// $AGENTOS_SOCKET (the launcher starts it as the app's uid, on
// "@aci.<package>.browser"). The debug commands print one JSON document:
// caps, cap <id> '<json>', search_engine '<json>', settings.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/runtime/sdk/aci"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/browser/service"
	"github.com/agentoslab/agentlab/sampleapps/internal/shell"
)

func main() {
	// Android's resolver (hosts file, netd), zone and temp folder before
	// the app dials or reads them.
	platform.Setup(nil)
	logger := shell.Logger()
	cli := apptool.CLI{
		Name: "browser",
		Open: func(ctx context.Context, dir string) (apptool.App, error) {
			return service.Open(ctx, dir, logger)
		},
		DebugCommands: service.DebugCommands,
		Streams: map[string]apptool.Command{
			"serve": func(ctx context.Context, app apptool.App, args []string) (any, error) {
				srv, err := app.(*service.App).Server()
				if err != nil {
					return nil, err
				}
				err = aci.RunServe(ctx, srv, args)
				var ue *aci.UsageError
				if errors.As(err, &ue) {
					return nil, &apptool.UsageError{Msg: ue.Msg}
				}
				return nil, err
			},
		},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
