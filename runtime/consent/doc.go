// Package consent holds the runtime's consent rules (spec §5): the
// sanitiser every third-party string passes before it reaches a consent
// card, the decision whether a tool call needs the user (RiskPolicy), the
// choices a card offers, the card's display model, and the user's
// approval policy file ("always allow", enabled switches).
//
// Those are pure and deterministic. On top of them sit the Coordinator,
// the queue of consent requests waiting for the user (FIFO, answerable by
// id, a timeout from creation, at most 16 pending, withdrawn when the task
// is cancelled, auto-answer modes for tests), and SessionMemory, "don't
// ask again in this conversation". Only the owner's admin API answers
// cards: no socket or message an app can reach leads to Respond.
package consent
