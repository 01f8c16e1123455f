package engine

import "errors"

// Session modes (spec §2.5).
const (
	modeDefault  = "default"
	modeReadOnly = "read_only"
	modeChat     = "chat"
)

// parseMode stands in for catalog.ParseMode until runtime/catalog ships
// it; it has the same contract: a known mode id, or an error.
func parseMode(s string) (string, error) {
	switch s {
	case modeDefault, modeReadOnly, modeChat:
		return s, nil
	}
	return "", errors.New("unknown mode")
}
