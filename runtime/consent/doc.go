// Package consent holds the runtime's consent rules (spec §5): the
// sanitiser every third-party string passes before it reaches a consent
// card, the decision whether a tool call needs the user (RiskPolicy), the
// choices a card offers, the card's display model, and the user's
// approval policy file ("always allow", enabled switches).
//
// The functions here are pure and deterministic; the consent coordinator
// (queue, timeouts, surfaces) is built on top of them.
package consent
