package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// FileName is the pairing file under the bridge's directory
// (<data>/desktop).
const FileName = "pairing.json"

const (
	fileVersion  = 1
	maxFileBytes = 64 << 10
)

// Pairing is one paired computer.
type Pairing struct {
	ID             string `json:"id"`
	TokenSHA256    string `json:"tokenSha256"`
	Label          string `json:"label"`
	PairedAtMillis int64  `json:"pairedAtMillis"`
	LastSeenMillis int64  `json:"lastSeenMillis"`
}

// State is the content of pairing.json.
type State struct {
	Version  int       `json:"version"`
	Enabled  bool      `json:"enabled"`
	Pairings []Pairing `json:"pairings"`
}

var (
	pairingIDRE = regexp.MustCompile(`^dp_[0-9a-f]{12}$`)
	sha256RE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// ErrCorrupt means pairing.json could not be used.
	ErrCorrupt = errors.New("bridge: pairing file is corrupt")
)

// ParseState reads pairing.json strictly; anything unexpected is
// ErrCorrupt and the caller falls back to the defaults (access off, no
// pairings).
func ParseState(data []byte) (State, error) {
	if len(data) > maxFileBytes {
		return State{}, fmt.Errorf("%w: over %d bytes", ErrCorrupt, maxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return State{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return State{}, fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	if s.Version != fileVersion {
		return State{}, fmt.Errorf("%w: version %d", ErrCorrupt, s.Version)
	}
	if len(s.Pairings) > MaxPairings {
		return State{}, fmt.Errorf("%w: %d pairings", ErrCorrupt, len(s.Pairings))
	}
	seen := map[string]bool{}
	for i, p := range s.Pairings {
		if !pairingIDRE.MatchString(p.ID) || !sha256RE.MatchString(p.TokenSHA256) || seen[p.ID] ||
			len(p.Label) > 4*maxLabelChars || p.Label != cleanLabel(p.Label) {
			return State{}, fmt.Errorf("%w: pairings[%d]", ErrCorrupt, i)
		}
		seen[p.ID] = true
	}
	if s.Pairings == nil {
		s.Pairings = []Pairing{}
	}
	return s, nil
}

func loadState(dir string) (State, string) {
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return State{Version: fileVersion, Pairings: []Pairing{}}, ""
	}
	if err != nil {
		return State{Version: fileVersion, Pairings: []Pairing{}}, "pairing file unreadable; desktop access off"
	}
	s, err := ParseState(data)
	if err != nil {
		return State{Version: fileVersion, Pairings: []Pairing{}}, "pairing file corrupt; desktop access off"
	}
	return s, ""
}

// saveState writes pairing.json through a temp file and an atomic rename.
func saveState(dir string, s State) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("bridge: save: %w", err)
	}
	s.Version = fileVersion
	if s.Pairings == nil {
		s.Pairings = []Pairing{}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("bridge: save: %w", err)
	}
	path := filepath.Join(dir, FileName)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("bridge: save: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("bridge: save: %w", werr)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("bridge: save: %w", err)
	}
	return nil
}
