// Package engine runs the runtime's sessions and tasks: a queue per
// session, the scheduler's limits, the turn loop between the model and
// the tools, cancellation, the event log and crash recovery (spec §2, §4).
//
// Identity (Caller) arrives from the transport; tools arrive through the
// Tools seam; models through runtime/model.
package engine
