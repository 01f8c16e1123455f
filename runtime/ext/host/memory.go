package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentoslab/agentlab/runtime/ext/internal/durable"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
)

// Files of the host's registry memory, relative to the data directory.
const (
	MemoryFile       = "ext/registry.json"
	MemoryBackupFile = "ext/registry.backup.json"
	memoryVersion    = 1
)

// Memory health (wire.Health.Memory).
const (
	MemoryIntact    = "intact"
	MemoryRecovered = "recovered"
	// MemoryReset: both copies were unreadable. The host did not start
	// from an empty memory (that would trust every current signer): every
	// third-party plugin found must be confirmed again.
	MemoryReset = "reset"
)

// memory is what the host remembers between runs (PersistedRegistry):
// per plugin id, the trusted signer and the last manifest identity, the
// tool lists last seen per server (so the catalog and its names come
// back without starting any app), and which plugin owns each name.
type memory struct {
	Version int                     `json:"version"`
	Plugins map[string]*memoryEntry `json:"plugins"`
	// Owners maps a plugin name to the id that holds it (name conflicts
	// go to the previous owner).
	Owners map[string]string `json:"owners"`
}

type memoryEntry struct {
	Package string `json:"package"`
	Name    string `json:"name"`
	// Trusted is the signer digest the owner accepted ("" when the
	// memory was lost and the plugin awaits confirmation).
	Trusted string `json:"trusted"`
	// Pending is a new signer seen but not confirmed.
	Pending     string `json:"pending,omitempty"`
	VersionCode int64  `json:"versionCode"`
	// Known are the tools last listed, per server.
	Known map[string][]plugin.ToolInfo `json:"known,omitempty"`
}

func newMemory() *memory {
	return &memory{Version: memoryVersion, Plugins: map[string]*memoryEntry{}, Owners: map[string]string{}}
}

func parseMemory(b []byte) (*memory, error) {
	m := &memory{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("registry memory: %w", err)
	}
	if m.Version != memoryVersion || m.Plugins == nil {
		return nil, errors.New("registry memory: not a version 1 document")
	}
	for id, e := range m.Plugins {
		if e == nil || e.Package == "" {
			return nil, fmt.Errorf("registry memory: bad entry %q", id)
		}
	}
	if m.Owners == nil {
		m.Owners = map[string]string{}
	}
	return m, nil
}

// memoryFile is the durable file of the memory.
func memoryFile(dataDir string) durable.File {
	return durable.File{Path: filepath.Join(dataDir, filepath.FromSlash(MemoryFile)), Backup: filepath.Join(dataDir, filepath.FromSlash(MemoryBackupFile))}
}

// loadMemory reads the memory and says how healthy it is.
func loadMemory(dataDir string) (*memory, string) {
	var m *memory
	src, _ := memoryFile(dataDir).Load(func(b []byte) error {
		var err error
		m, err = parseMemory(b)
		return err
	})
	switch src {
	case durable.FromFile:
		return m, MemoryIntact
	case durable.FromBackup:
		return m, MemoryRecovered
	case durable.None:
		return newMemory(), MemoryIntact
	}
	return newMemory(), MemoryReset
}

func (m *memory) save(dataDir string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return memoryFile(dataDir).Save(b)
}
