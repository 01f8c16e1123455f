// Package console is the owner's web console: server-rendered pages that
// `agentosd serve` offers on the abstract socket "@agentos-console"
// (transport.Names.Console), reached from a computer through
// `adb forward tcp:N localabstract:agentos-console`
// (`agentlab console -s SERIAL` prints the URL).
//
// Every owner action of the console is an admin method call, made in
// process through admin.Server.Invoke with the connection's own peer
// credentials: the console holds no logic of its own beyond showing the
// results and turning forms into params, so ctl and the console cannot
// disagree.
//
// # Security
//
//   - Admission: only uid 0, 2000 (adbd, i.e. the forward) and the
//     runtime's uid are served; any other peer is closed without a byte.
//   - A per-start random token: the URL carries it once (/?token=…), the
//     console turns it into an HttpOnly SameSite=Strict cookie and
//     redirects it out of the address bar. Every request needs it.
//   - Host must be a loopback name (DNS rebinding); a POST must carry an
//     Origin equal to http://<Host> and a CSRF field derived from the
//     token.
//   - A strict Content-Security-Policy (no inline script or style, no
//     outside origin); every string is escaped by html/template.
//   - Consent and authorization answers carry the time their card was
//     rendered, signed; an answer within TapDelay of it is not sent (the
//     page's script also ignores taps that early).
package console
