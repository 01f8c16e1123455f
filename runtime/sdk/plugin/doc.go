// Package plugin is the provider SDK: what an app uses to offer tools to
// AgentOS (the Go counterpart of the seed's plugin-sdk, §5.4).
//
// An app registers tools on a Server and serves it on its socket:
//
//	srv := plugin.NewServer(plugin.Info{Name: "memo"}, nil)
//	srv.MustAddTool(plugin.Tool{
//		Name:        "memo_add",
//		Description: "Add a memo.",
//		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
//		Handler: func(ctx context.Context, args json.RawMessage) (*plugin.Result, error) {
//			…
//			return plugin.JSON(map[string]any{"id": id}), nil
//		},
//	})
//	err := srv.Serve(ctx) // `<app> serve --server memo`, started by the launcher
//
// # The app's socket
//
// The launcher starts `<binary> serve --server <server>` as the app's
// uid with $AGENTOS_SOCKET naming the socket to listen on
// (transport.Names.App(package, server), "@agentos-app.<package>.<server>").
// The runtime dials it and checks with SO_PEERCRED that the listener runs
// as the package's uid, so a squatter on the name is refused. The server
// in turn admits only the runtime's uid ($AGENTOS_RUNTIME_UID, or
// Options.AllowUIDs) and its own uid (an app testing itself): every other
// peer is closed without a byte. That pair of checks is this system's
// analogue of Android's BIND_MCP_SERVICE signature permission: no other
// app can bind a provider's service, and the launcher that starts
// services admits only the runtime.
//
// # Wire
//
// MCP (protocol 2025-06-18, from github.com/modelcontextprotocol/go-sdk)
// as newline-delimited JSON-RPC, each message at most 65,536 UTF-16 code
// units (Transport). A tools/call result whose encoded response would be
// larger is replaced by an isError result saying so; a handler's error or
// panic becomes an isError result "<tool> failed: …" (never a stack
// trace). Handlers see their context cancelled when the client sends
// notifications/cancelled.
//
// ServeStdio serves the same tools on stdin/stdout (`<app> mcp --stdio`)
// for the MCP Inspector or any other MCP client. Client is the extension
// host's client; an app can use it to test its own server end to end.
package plugin
