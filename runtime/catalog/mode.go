package catalog

import "github.com/agentoslab/agentlab/runtime/errcode"

// Mode is a session mode (spec §2.5), effective from the next task.
type Mode string

const (
	// ModeDefault: every in-scope tool, normal consent.
	ModeDefault Mode = "default"
	// ModeReadOnly: READ tools only; WRITE, HIGH and session MCP tools hidden.
	ModeReadOnly Mode = "read_only"
	// ModeChat: no tools and no skills list.
	ModeChat Mode = "chat"
)

// Modes lists the modes from widest to narrowest.
func Modes() []Mode { return []Mode{ModeDefault, ModeReadOnly, ModeChat} }

// ParseMode reads a mode a client asked for. Anything but the three ids,
// including "", is invalid_params; the text never echoes the value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeDefault, ModeReadOnly, ModeChat:
		return m, nil
	}
	return "", errcode.New(errcode.InvalidParams, "mode must be one of default, read_only, chat")
}

// StoredMode reads a persisted mode; an unreadable value is chat (the
// narrowest, fail closed).
func StoredMode(s string) Mode {
	m, err := ParseMode(s)
	if err != nil {
		return ModeChat
	}
	return m
}

// rank orders modes by how much they allow; unknown modes rank as chat.
func (m Mode) rank() int {
	switch m {
	case ModeDefault:
		return 2
	case ModeReadOnly:
		return 1
	}
	return 0
}

// Narrows reports whether switching a session from one mode to another
// only narrows what it may do (or keeps it the same); set_mode can only
// narrow (spec §2.2).
func Narrows(from, to Mode) bool {
	if _, err := ParseMode(string(to)); err != nil {
		return false
	}
	return to.rank() <= from.rank()
}
