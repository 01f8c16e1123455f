package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// StateVersion is the state file's version.
const StateVersion = 1

// State is the bridge's state file: the token of each paired device.
//
//	{"version":1,"devices":{"adb:<serial>":{"token":…,"pairingId":…,"label":…,"pairedAt":…}}}
type State struct {
	Version int               `json:"version"`
	Devices map[string]Paired `json:"devices"`
}

// Paired is one paired device.
type Paired struct {
	Token     string `json:"token"`
	PairingID string `json:"pairingId"`
	Label     string `json:"label"`
	// PairedAt is an RFC 3339 time.
	PairedAt string `json:"pairedAt"`
}

// MaxStateSize bounds the state file.
const MaxStateSize = 1 << 20

// ErrBadState: the state file is not a bridge state file.
var ErrBadState = errors.New("bridge state file is unreadable")

// DefaultStatePath is $AGENTOS_BRIDGE_STATE, else
// $XDG_CONFIG_HOME/agentos/acp-bridge.json, else
// ~/.config/agentos/acp-bridge.json.
func DefaultStatePath(getenv func(string) string) string {
	if p := getenv("AGENTOS_BRIDGE_STATE"); p != "" {
		return p
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "agentos", "acp-bridge.json")
}

// LoadState reads the state file; a missing file is an empty state.
func LoadState(path string) (*State, error) {
	st := &State{Version: StateVersion, Devices: map[string]Paired{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxStateSize {
		return nil, fmt.Errorf("%s: %w (not a regular file under %d bytes)", path, ErrBadState, MaxStateSize)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	st, err = ParseState(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (fix it, or remove it and pair again)", path, err)
	}
	return st, nil
}

// ParseState reads a state file's content.
func ParseState(data []byte) (*State, error) {
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if st.Version != StateVersion {
		return nil, fmt.Errorf("%w: version %d (this bridge knows %d)", ErrBadState, st.Version, StateVersion)
	}
	if st.Devices == nil {
		st.Devices = map[string]Paired{}
	}
	return &st, nil
}

// Save writes the state: the folder is created 0700, the file goes to
// <path>.<pid>.tmp with mode 0600 and is renamed over path.
func (st *State) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + "." + strconv.Itoa(os.Getpid()) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Chmod(0o600) // an existing tmp file kept its old mode
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}
