// Package engine runs the runtime's sessions and tasks: a queue per
// session, the scheduler's limits, the turn loop between the model and
// the tools, cancellation, the event log and crash recovery (spec §2, §4).
//
// Identity (Caller) arrives from the transport; tools arrive through the
// Tools seam; models through runtime/model (ModelSource); prompt admission
// through Admission.
//
// # Tasks
//
// A prompt becomes a task. Its state changes only through one function
// (move), which checks the move against the table
//
//	(new)             → queued
//	queued            → running | cancelled
//	running           → completed | cancelled | failed | recovery_required
//	recovery_required → abandoned | expired
//
// and writes the new state together with its event in one store
// transaction before anything acts on it. Each session runs one task at a
// time, oldest first; at most Limits.MaxRunningSessions sessions run at
// once and Limits.MaxRunningPerOwner per owner. A task's context descends
// from the engine, never from a request: a client that goes away does not
// cancel it; CancelSession, CancelOwner, the execution deadline and Close
// do. A ModelLeaser source can also withdraw the model a turn runs on
// (the owner cleared the key): the turn then fails model_not_configured
// with details.reason "key_revoked" (spec §3.2).
//
// # Event log
//
// Every session has an append-only log with gapless sequence numbers (see
// the Ev* constants for the vocabulary). An event is published to
// followers (Follow) only after it has committed, so whatever a client
// saw survives a crash. The conversation the model sees is rebuilt from
// the log (cached per session), so a restarted runtime continues where
// the log ends; a task found running at start ends recovery_required
// (tool_result_unknown when a tool call was dispatched and never settled,
// else agent_core_failed) and its session takes no prompt until
// ResolveRecovery.
package engine
