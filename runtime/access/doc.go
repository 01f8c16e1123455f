// Package access wires the runtime's doors for others into `agentosd
// serve`: the caller quotas (the engine's Admission), the model
// configuration the owner can change at run time (the engine's
// ModelSource), the owner's admin API on @agentos-admin, the caller
// channel on @agentos-caller with its authorization registry and the
// package table, and desktop access on @agentos-acp (pairing first;
// the socket exists only while desktop access is on).
//
// Configure fills the hooks of daemon.Options before daemon.Serve; the
// rest starts through Options.Attach once the runtime is open and stops
// before it closes. Files under the data directory: acp/callers.json,
// desktop/pairing.json, model.json, model.key.
package access
