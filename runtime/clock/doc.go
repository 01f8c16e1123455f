// Package clock is the runtime's one time source: Clock (Now, timers,
// AfterFunc, tickers), the real clock, and Sleep, WithTimeout and Since
// on any Clock. Every subsystem takes a Clock in its options (nil means
// Real) and the composition root passes one clock to all of them:
// Real in release builds, the lab's virtual clock in builds with the
// agentos_labclock tag (runtime/clock/labclock). Tests use
// runtime/clock/clocktest, whose time moves only when the test says.
//
// # Which time is whose
//
// The rule for the runtime's code:
//
// On the Clock: every duration that is a rule of the product — an
// expiry, a TTL, a cooldown, a sliding window, a timeout the spec names
// for something the user or a caller waits on (consent cards, tool
// calls, task execution, cancel waits and graces), a backoff, an idle
// release — and every timestamp such a rule is computed from or that
// records when a product event happened (the event log, sessions and
// tasks, pairings, caller records, quota admissions, status "since"s,
// the heartbeat). These are what a lab scenario waits out, so virtual
// time must move them.
//
// On the wall clock (the time package directly), because the thing
// measured lives outside the runtime's rules:
//
//   - I/O deadlines on sockets, pipes and HTTP (SetDeadline, dialer and
//     transport timeouts, a streamed body's silence, the pairing
//     handshake's first line): the kernel and the network keep wall
//     time, and these bound a peer's silence, not a product rule.
//   - Managing processes: SIGTERM-to-SIGKILL graces, waiting for a
//     started process to listen or to be reaped, the launcher's start,
//     stop and run bounds. Processes run in wall time.
//   - The implementation's own pacing: polls of files and flags, the
//     heartbeat watch, debounces, the output-coalescing window, the
//     store's checkpoints, dial retry loops.
//   - Measurements of how long something took (elapsed milliseconds in
//     logs, diagnostics and results): they describe performance.
//   - context.WithTimeout bounds on internal calls (an admin call, a
//     link request): a context's deadline is wall time and reaches the
//     I/O beneath. A product timeout that ends a context uses
//     WithTimeout here instead and is told by its cause (TimedOut).
//   - Times that come from elsewhere: an HTTP Retry-After date, file
//     modification times, ids' embedded times.
//
// Production code never reaches a fake: there are no setters, and a
// release binary does not link the virtual clock (internal/archtest).
package clock
