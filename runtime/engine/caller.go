package engine

import "strconv"

// CallerKind says who is calling the runtime (spec §2.1).
type CallerKind string

const (
	// CallerSelf is the runtime's own UI (the owner, through agentosd ctl).
	CallerSelf CallerKind = "SELF"
	// CallerApp is an authorized third-party app on @agentos-caller.
	CallerApp CallerKind = "APP"
	// CallerDesktop is a paired desktop on @agentos-acp or agentosd stdio.
	CallerDesktop CallerKind = "DESKTOP"
	// CallerSystem is the runtime itself.
	CallerSystem CallerKind = "SYSTEM"
)

// Caller is the identity of a connection. It comes only from the kernel
// (SO_PEERCRED) and the runtime's package table, never from anything a
// message says.
type Caller struct {
	Kind CallerKind
	// UID is the peer's uid (adbd = 2000 for desktops).
	UID int
	// Package is the app's package name, for CallerApp only, taken from
	// the package table by uid.
	Package string
	// Label is a display-only name (cleaned app label, or "desktop").
	Label string
}

// OwnerKey is the key sessions belong to: "uid:<uid>" for SELF and APP,
// "desktop" for all desktops, "system" for the runtime.
func (c Caller) OwnerKey() string {
	switch c.Kind {
	case CallerDesktop:
		return "desktop"
	case CallerSystem:
		return "system"
	default:
		return "uid:" + strconv.Itoa(c.UID)
	}
}

// SeesAll reports whether the caller sees every session (the owner's UI).
func (c Caller) SeesAll() bool { return c.Kind == CallerSelf }
