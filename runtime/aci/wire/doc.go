// Package wire is the ACI (Agent Capability Interface) protocol as it
// crosses a process boundary: the frames, the request and response
// documents, typed values, the capability JSON of getCapabilities, the
// one code space that understands every upstream numbering, the large
// result side channel and a client that checks who it talks to.
//
// ACI lets an app (a "controlled app", the callee) expose typed
// capabilities that a controller (the AgentOS runtime) discovers and
// calls on a model's behalf. Upstream (the Quor-a ZorvAI apps) carries it
// over Android Binder, with a later LocalSocket fast path; an app bundle
// here serves it on an abstract unix socket, "@aci.<package>.<service>"
// (transport.Names.ACI), and runtime/sdk/aci is the callee's SDK.
//
// # Frames
//
// Every message is one frame: a 4-byte magic, a 4-byte big-endian payload
// length and the payload, 0 < length ≤ MaxPayload (8 MiB), as upstream's
// fast path. Requests carry the magic "ACIS", responses "ACIR". The
// payload is one JSON object (upstream marshals an Android Parcel, which
// nothing outside Android can read; the fields are the same). A
// connection carries one request and its response, then closes; a
// callAsync response is preceded by any number of progress frames.
//
// Request (keys are case-sensitive; unknown or repeated keys are errors):
//
//	{"method":"call"|"callAsync"|"getCapabilities"|"ping",  // absent means "call"
//	 "capability":"browser_open", "version":"1.0",
//	 "params":{"url":{"string":"https://…"},"limit":{"int":50}},
//	 "callId":"…", "callerPkg":"…"}
//
// Response:
//
//	{"success":true, "result":{"ready":{"boolean":true}}, "callId":"…"}
//	{"success":false, "errorCode":400, "errorMessage":"no url", "callId":"…"}
//	{"success":true, "capabilities":["{\"id\":…}", …]}   // getCapabilities
//	{"success":true, "pong":true}                         // ping
//	{"progress":{"percent":40,"message":"…"}, "callId":"…"} // callAsync, before the result
//
// Values are typed as in an Android Bundle: {"string":…}, {"int":…}
// (64-bit), {"double":…}, {"boolean":…}, {"bytes":<base64>} and
// {"string_array":[…]}. Plain JSON would lose the difference between 1
// and 1.0 and between bytes and text, which upstream's callees depend on.
//
// # Capabilities
//
// getCapabilities answers one JSON object per capability, each as its
// own string (upstream's String[]), with upstream's keys in upstream's
// order (Capability.MarshalJSON). ParseCapabilities applies upstream's
// parsing defaults, reads both flag spellings and skips bad elements with
// a reason each, so one broken capability never hides the others.
//
// # Identity
//
// Nothing in a request identifies its sender: callerPkg is a claim. The
// callee learns its peer from the kernel (SO_PEERCRED), and Client checks
// the listener's uid before it sends a byte, so another uid squatting on
// the name gets nothing.
//
// # Codes
//
// Code is one documented code space. Classify reads a response's
// errorCode in any of upstream's three numberings (the AAR's 400-style
// codes, main's 0–8, the governance 15xx/25xx codes and QuroAciErrors)
// and a structured errorMessage ({"aci_error":true,…}) when there is one.
package wire
