package aci_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/aci"
)

// Expose a capability in 20 lines: declare it, handle it, serve it. The
// launcher runs the app's `serve --server shout` with $AGENTOS_SOCKET
// set; here the example serves on a socket of its own and calls itself
// the way the runtime would.
func Example() {
	srv := aci.NewServer("shout", nil)
	srv.MustAdd(aci.NewCapability("shout", "Repeat a text in capitals, n times.").
		Param("text", aci.TypeString, aci.Required, "The text.").
		Param("times", aci.TypeInt, aci.Optional, "How often (default 1).").
		Result("shouted", aci.TypeString, "The text in capitals.").
		Flags(aci.FlagBackground, aci.FlagNoUI).
		Handle(func(ctx context.Context, call *aci.Call) (aci.Bundle, error) {
			n := call.IntOr("times", 1)
			if n < 1 || n > 10 {
				return nil, aci.Errorf(aci.CodeBadRequest, "times must be 1 to 10, not %d", n)
			}
			s := strings.Repeat(strings.ToUpper(call.String("text"))+"!", int(n))
			return aci.Bundle{"shouted": aci.String(s)}, nil
		}))

	ctx, stop := context.WithCancel(context.Background())
	socket := fmt.Sprintf("@aci.example.%d.shout", os.Getpid())
	serving, _ := srv.Start(ctx, socket) // aci.RunServe(ctx, srv, args) in an app

	// The runtime's side: the listener must be the app's uid.
	cl := &wire.Client{Socket: socket, UID: os.Getuid()}
	resp, _ := cl.Call(ctx, "shout", wire.Bundle{"text": wire.String("hi"), "times": wire.String("2")}, 0)
	fmt.Println(resp.Result["shouted"].Str())
	resp, _ = cl.Call(ctx, "shout", wire.Bundle{"text": wire.String("hi"), "times": wire.Int(99)}, 0)
	fmt.Println(resp.Err())
	stop()
	fmt.Println(serving.Wait())
	// Output:
	// HI!HI!
	// aci 400 BAD_REQUEST: times must be 1 to 10, not 99
	// <nil>
}

// A description that is a version string is refused (upstream's
// Capability.create(id, "1.0") bug showed the model nothing).
func ExampleNewCapability() {
	c := aci.NewCapability("browser_open", "1.0").Handle(func(context.Context, *aci.Call) (aci.Bundle, error) { return nil, nil })
	fmt.Println(c.Err())
	// Output: capability browser_open: the description is a version string: pass what the capability does (upstream's create(id, "1.0") bug)
}
