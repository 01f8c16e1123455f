// Package callers is the authorization registry of third-party caller
// apps (spec §5.6, §4.4): which app packages may open the caller channel,
// the owner's pending authorization "cards", the deny cooldown, and
// revocation.
//
// An app is known by its package name and signing digest, both taken from
// the runtime's package table by the connection's uid, never from a
// message. The first open of an unknown app creates a PENDING entry with
// a request id and is refused at once with authorization_pending (the
// open never blocks); every retry gets the same request id. The owner
// answers through the admin API. No decision within the pending TTL
// (100 s) counts as a denial; an app that stops retrying for 5 s has its
// card withdrawn (a denial only if it had waited at least 85 s). A denial
// holds for the cooldown (10 min), after which the app is asked again. A
// changed signing digest revokes the old grant and asks again.
//
// Revocation (deny of an allowed app, or remove) closes the app's open
// channels at once and cancels the running and queued tasks of every uid
// the package was seen with, including tasks whose channel already
// closed.
//
// Only ALLOWED and DENIED entries are persisted, in <data>/acp/callers.json
// (atomic write, a backup copy; a corrupt file is kept as
// callers.json.corrupt and the backup used; with no usable backup the
// table starts empty, so everyone is asked again — fail closed). PENDING
// entries live in memory.
package callers
