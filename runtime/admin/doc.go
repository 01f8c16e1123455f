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
// One JSON object per line, UTF-8, at most MaxRequestChars per request:
//
//	→ {"id":1,"method":"status","params":{}}
//	← {"id":1,"result":{…}}
//	← {"id":2,"error":{"code":-32041,"message":"forbidden: …","data":{"agentosCode":"forbidden","retryable":false}}}
//
// "id" is a number or a string and is echoed; "params" is an object or
// absent. Errors have the runtime's one wire shape (errcode.WireError).
// Requests on one connection are answered in order. A line that is not
// JSON, or not a request, is answered with invalid_params and id null; an
// over-long line is answered with payload_too_large and the connection is
// closed.
//
// # Adding a method
//
// Methods live in a sorted table. A feature adds its own in its own file
// with an init function, and the server wiring provides what the handlers
// need:
//
//	func init() {
//		admin.Register(admin.Method{
//			Name:    "callers.list", // "<group>.<verb>", lowercase
//			Perm:    admin.Owner,      // or admin.Root, admin.Root|admin.Shell …
//			Summary: "list remembered caller apps",
//			Handle:  callersList,
//		})
//		admin.RegisterVerb(admin.Verb{ // the `agentosd ctl callers list` side
//			Group: "callers", Name: "list", Method: "callers.list",
//			Usage: "callers list", Text: printCallers,
//		})
//	}
//
//	func callersList(ctx context.Context, c *admin.Call) (any, error) {
//		reg, err := admin.Use[*callers.Registry](c) // provided by serve: admin.Provide(srv, reg)
//		…
//	}
//
// Registering a name twice panics. Handlers return errcode errors; any
// other error is answered as internal without its text. Secrets (a model
// key) travel in params that ctl reads from stdin (Verb.Params gets
// stdin), never from argv, and handlers never log params.
package admin
