package acp

import (
	"context"
	"sync"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
)

// ServerStatus is one caller-supplied MCP server's state, as reported in
// the session_info_update _meta (spec §2.4).
type ServerStatus struct {
	Name      string `json:"name"`
	Connected bool   `json:"connected"`
	ToolCount int    `json:"toolCount"`
	Reason    string `json:"reason,omitempty"`
}

// SessionServers keeps the caller-supplied MCP servers of sessions (spec
// §2.9). URLs and headers live in memory only: never in the store, the
// event log or logs. The extension host's MCP client fills this seam.
type SessionServers interface {
	// Attach replaces the session's servers with servers (already
	// validated by catalog.ValidateSessionServers; nil drops them all) and
	// reports each one's state. An error (quota_exceeded for the per-app
	// and total limits) leaves the session's servers as they were.
	Attach(ctx context.Context, sessionID string, c engine.Caller, servers []catalog.SessionServer) ([]ServerStatus, error)
	// Forget drops the session's servers (close, delete).
	Forget(sessionID string)
}

// MemoryServers is the SessionServers used until an MCP client is wired:
// it keeps the servers in memory, enforces the per-app and total limits,
// and reports every server connected:false, reason "connect_failed".
type MemoryServers struct {
	mu       sync.Mutex
	sessions map[string]memoryEntry // guarded by mu
}

type memoryEntry struct {
	owner   string
	servers []catalog.SessionServer
}

var _ SessionServers = (*MemoryServers)(nil)

// NewMemoryServers returns an empty MemoryServers.
func NewMemoryServers() *MemoryServers {
	return &MemoryServers{sessions: map[string]memoryEntry{}}
}

// Attach implements SessionServers.
func (m *MemoryServers) Attach(_ context.Context, sessionID string, c engine.Caller, servers []catalog.SessionServer) ([]ServerStatus, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	owner := c.OwnerKey()
	total, mine := len(servers), len(servers)
	for id, e := range m.sessions {
		if id == sessionID {
			continue
		}
		total += len(e.servers)
		if e.owner == owner {
			mine += len(e.servers)
		}
	}
	if c.Kind == engine.CallerApp && mine > catalog.MaxSessionServersPerApp {
		return nil, catalog.ServerQuotaError(catalog.MaxSessionServersPerApp)
	}
	if total > catalog.MaxSessionServersTotal {
		return nil, catalog.ServerQuotaError(catalog.MaxSessionServersTotal)
	}
	if len(servers) == 0 {
		delete(m.sessions, sessionID)
		return nil, nil
	}
	m.sessions[sessionID] = memoryEntry{owner: owner, servers: append([]catalog.SessionServer(nil), servers...)}
	out := make([]ServerStatus, len(servers))
	for i, s := range servers {
		out[i] = ServerStatus{Name: s.Name, Reason: "connect_failed"}
	}
	return out, nil
}

// Forget implements SessionServers.
func (m *MemoryServers) Forget(sessionID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, sessionID)
}

// Count returns how many servers are kept, for tests and diagnostics.
func (m *MemoryServers) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.sessions {
		n += len(e.servers)
	}
	return n
}
