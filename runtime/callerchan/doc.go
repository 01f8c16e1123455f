// Package callerchan serves the caller channel, the socket third-party
// apps open to call AgentOS over ACP (transport.Names.Caller,
// "@agentos-caller"; spec §2.1, §5.6).
//
// # Identity
//
// A connection's identity comes only from the kernel: the peer uid
// (SO_PEERCRED) is looked up in the runtime's package table. The
// runtime's own uid is its UI (caller kind SELF). Any other uid must
// belong to exactly one installed package — no package, or several
// packages sharing the uid, is refused with not_open and nothing is
// recorded. The authorization registry (consent/callers) then decides.
// Names a client claims in messages (clientInfo and the like) are never
// read here, and the ACP layer ignores them too.
//
// # Channel-open protocol
//
// Before any ACP message, the runtime writes exactly one line. The client
// reads it before sending anything (so it never needs a timeout to tell
// the outcomes apart):
//
// Success — a JSON-RPC notification; ACP (line-delimited JSON-RPC, the
// client starting with initialize) follows on the same connection:
//
//	{"jsonrpc":"2.0","method":"_org.agentos/channel","params":{"version":1,"state":"open","caller":{"kind":"APP","package":"org.example.notes"}}}
//
// Refusal — a JSON-RPC error response with a null id; the runtime closes
// the connection right after it:
//
//	{"jsonrpc":"2.0","id":null,"error":{"code":-32040,
//	 "message":"agentos.acp.authorization_pending: waiting for the user to allow this app to use AgentOS; retry in a second",
//	 "data":{"agentosCode":"not_open","retryable":false,"reason":"authorization_pending","requestId":"6f1c…"}}}
//
// message is "agentos.acp.<reason>: <text>", the text upstream's Binder
// SecurityException carried. data.reason is one of authorization_pending,
// denied and not_open; data.requestId is present for authorization_pending
// only (the same id on every retry until the owner decides).
// data.agentosCode is not_open (-32040) for all three reasons: the error
// table of spec §3 is frozen (only additions by the spec) and has no
// codes for "pending" or "denied", and the Binder exception carried only
// text, so the precise outcome travels in data.reason. Clients branch on
// data.reason, never on the message text.
//
// The runtime bounds connections: at most MaxConnsPerUID per uid and
// MaxConns in all; over either, the refusal not_open is written and the
// connection closed. Revocation closes an app's connections at once.
package callerchan
