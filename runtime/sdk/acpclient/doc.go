// Package acpclient is the caller SDK: what a third-party app links to
// call AgentOS over ACP, the Go counterpart of upstream's acp-android SDK
// (spec §2.10).
//
// Connect opens the caller channel (transport.Names.Caller). The runtime
// knows the app only by its uid; the first time, the owner is asked to
// allow it and Connect keeps retrying once a second (at most 90 s),
// calling Options.OnWaiting on every try, until the owner answers.
//
//	conn, err := acpclient.Connect(ctx, &acpclient.Options{
//		OnWaiting: func(requestID string, waited time.Duration) { showHint() },
//	})
//	if errors.Is(err, acpclient.ErrDenied) { … }
//	s, err := conn.NewSession(ctx, acpclient.SessionOptions{
//		ToolScope: []acpclient.ToolRef{{Plugin: "notes", Tool: "note_create"}},
//	})
//	for ev, err := range s.Prompt(ctx, "Save a note: buy milk", acpclient.PromptOptions{}) {
//		…
//	}
//
// Prompt is cold: nothing is sent until the iteration starts; stopping the
// iteration early or cancelling ctx sends session/cancel. Errors are
// *Error values with a Code of the fixed set (NOT_INSTALLED,
// AUTHORIZATION_PENDING_TIMEOUT, DENIED, NO_MODEL, BUSY, RATE_LIMITED,
// TOO_LARGE, DISCONNECTED, SESSION_NOT_FOUND, INVALID_REQUEST,
// UNSUPPORTED, FAILED); match them with errors.Is(err, ErrBusy) and so on.
//
// The package imports only the standard library, acp-go-sdk (JSON-RPC
// plumbing) and the runtime's transport, errcode and catalog packages.
package acpclient
