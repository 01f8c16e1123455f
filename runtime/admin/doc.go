// Package admin is the owner-only control API behind `agentosd ctl`: a
// JSON-lines request/response protocol on the admin socket
// (transport.Names.Admin, "@agentos-admin"), its server, its client and
// the ctl command line.
//
// # Admission
//
// Identity comes only from SO_PEERCRED. A connection is admitted when its
// peer uid is 0 (root), 2000 (shell, i.e. adbd) or the runtime's own uid;
// any other peer is closed before a byte is read or written. Each method
// then names the peer classes it admits (Perm): app.install, for example,
// is Root only.
//
// # Wire format
//
// One JSON-RPC 2.0 message per line, UTF-8, at most MaxRequestChars per
// request, on the runtime's one RPC peer (runtime/internal/rpc) as a
// server of requests only:
//
//	→ {"id":1,"method":"status","params":{}}
//	← {"jsonrpc":"2.0","id":1,"result":{…}}
//	← {"jsonrpc":"2.0","id":2,"error":{"code":-32041,"message":"forbidden: …","data":{"agentosCode":"forbidden","retryable":false}}}
//
// "jsonrpc" may be left out of requests. "id" is a number or a string
// and is echoed (a request without one is answered with id null);
// "params" is an object or absent. Errors have the runtime's one wire
// shape (errcode.WireError). Requests on one connection are answered one
// at a time, in order. A line that is not JSON, or not a request, is
// answered with invalid_params and id null; an over-long line is
// answered with payload_too_large and the connection is closed.
//
// # Adding a method
//
// A feature exports its methods as a value, each handler bound to the
// backend it needs, and its ctl verbs; the composition root
// (runtime/daemon) passes every feature's methods to NewServer and every
// verb table to Ctl — nothing registers itself:
//
//	func AdminMethods(reg *callers.Registry) []admin.Method {
//		return []admin.Method{{
//			Name:    "callers.list", // "<group>.<verb>", lowercase
//			Perm:    admin.Owner,     // or admin.Root, admin.Root|admin.Shell …
//			Summary: "list remembered caller apps",
//			Handle: func(ctx context.Context, c *admin.Call) (any, error) {
//				return reg.List(), nil
//			},
//		}}
//	}
//
//	func CtlVerbs() []admin.Verb { // the `agentosd ctl callers list` side
//		return []admin.Verb{{Group: "callers", Name: "list", Method: "callers.list",
//			Summary: "list caller apps", Text: printCallers}}
//	}
//
// A name listed twice panics when the server (or ctl) is built. Handlers
// return errcode errors; any other error is answered as internal without
// its text. Secrets (a model key) travel in params that ctl reads from
// stdin (Verb.Params gets stdin), never from argv, and handlers never log
// params.
package admin
