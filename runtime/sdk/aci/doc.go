// Package aci is the SDK for controlled apps: what an app uses to expose
// typed capabilities to AgentOS over ACI, the Agent Capability Interface
// (the Go counterpart of upstream's aci-core BaseACIService).
//
// # What ACI is
//
// A controlled app declares capabilities — an id, a description the model
// reads, typed params and results, flags, an optional permission and
// whether the user must confirm each call — and serves them on its own
// socket. The AgentOS runtime is the controller: it starts the app on
// demand (the launcher runs `<app> serve --server <service>` as the app's
// uid), fetches the capabilities, offers each to the model as a typed
// tool and calls it synchronously (15 s unless the capability declares
// its own budget) or asynchronously with progress (0–100), each call
// under the runtime's consent, quotas and audit (the controller is
// runtime/aci/controller).
//
// Expose a capability in a few lines:
//
//	srv := aci.NewServer("browser", nil)
//	srv.MustAdd(aci.NewCapability("page_title", "Return the title of a web page.").
//		Param("url", aci.TypeString, aci.Required, "The page's URL.").
//		Result("title", aci.TypeString, "The page's <title>.").
//		Flags(aci.FlagBackground, aci.FlagNoUI).
//		Handle(func(ctx context.Context, call *aci.Call) (aci.Bundle, error) {
//			title, err := fetchTitle(ctx, call.String("url"))
//			if err != nil {
//				return nil, aci.Errorf(aci.CodeBadRequest, "cannot read %s: %v", call.String("url"), err)
//			}
//			return aci.Bundle{"title": aci.String(title)}, nil
//		}))
//	err := aci.RunServe(ctx, srv, os.Args[2:]) // `<app> serve --server browser`
//
// # What the SDK guarantees
//
//   - Identity from the kernel. The socket admits the runtime's uid
//     ($AGENTOS_RUNTIME_UID, or Options.RuntimeUIDs) and the app's own uid,
//     closing every other peer without a byte. Call.Caller is the peer's
//     SO_PEERCRED; the request's callerPkg is never an identity. When the
//     peer is the runtime, Caller.OnBehalfOf names the app on whose behalf
//     it calls (the runtime vouches for it); from anyone else it is empty.
//   - A permission hook (Options.Allow) sees that verified caller before
//     every call and may refuse it (PermissionDenied).
//   - Declared types hold. Params are converted to their declared types
//     (50 and "50" are both an int 50; a number for a string param becomes
//     its text instead of being dropped, upstream's bug), an undeclared or
//     ill-typed param or a missing required one is BadRequest, and a
//     handler can read each param with the accessor of its type. Results
//     must be declared with their types too, so a capability cannot
//     promise keys it never returns (upstream's browser_info did).
//   - Confirmation is checked. A capability declared with UserConfirm or
//     FlagDangerous is refused (PermissionDenied) unless the runtime sends
//     user_confirmed=true, which it does only after the owner answered.
//   - Time is bounded and cancellation reaches the handler. A synchronous
//     call's context ends at the capability's Timeout (15 s by default,
//     advertised to the controller as syncTimeoutMs) and when the
//     controller closes the connection (it gave up): a timed-out call does
//     not keep working for nobody. The SDK answers Timeout itself.
//   - Descriptions are descriptions. NewCapability refuses a description
//     that is a version string, upstream's create(id, "1.0") bug.
//   - Large text results follow the ACI rules: Large declares the keys and
//     Call.PutLarge fills them (wire.Large: cut at 150,000 characters, the
//     full value gzip-attached up to 900,000 bytes).
//   - aci_protocol is answered (aci-protocol-v1) unless the app declares
//     its own, and ping and getCapabilities need no code.
//
// Handlers return a Bundle or an error: an *Error made with Errorf carries
// its code to the controller (BadRequest for a bad argument, Unsupported
// for something the app cannot do); any other error or a panic is
// Internal with the message "<capability> failed: …", never a stack.
//
// The wire format (frames, typed values, codes) is runtime/aci/wire.
package aci
