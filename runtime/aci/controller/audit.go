package controller

import "sync"

// AuditEntry is one call as the audit keeps it: who, what, how it ended,
// how long it took. Never arguments or results.
type AuditEntry struct {
	At int64 `json:"at"` // unix ms on the runtime's clock
	// Caller is the originating app's package, or the caller kind
	// (desktop, shell, …) for the owner's own sessions.
	Caller string `json:"caller"`
	// Capability is "<package>/<service>/<capability>".
	Capability string `json:"capability"`
	// Outcome is ok, denied, failed, timeout, cancelled, unavailable or
	// invalid_arguments.
	Outcome string `json:"outcome"`
	// Code is the ACI code (wire.Code), 0 for ok.
	Code int `json:"code"`
	// Layer is the permission layer (1–5) that refused the call, 0 when
	// none did.
	Layer      int   `json:"layer,omitempty"`
	DurationMs int64 `json:"durationMs"`
}

// auditRing keeps the last entries (upstream kept 500 and, by a bug,
// only the last one).
type auditRing struct {
	mu      sync.Mutex
	entries []AuditEntry
	next    int
	full    bool
}

func newAuditRing(n int) *auditRing { return &auditRing{entries: make([]AuditEntry, n)} }

func (a *auditRing) add(e AuditEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries[a.next] = e
	a.next = (a.next + 1) % len(a.entries)
	if a.next == 0 {
		a.full = true
	}
}

// last returns up to n entries, oldest first (n ≤ 0: all).
func (a *auditRing) last(n int) []AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var all []AuditEntry
	if a.full {
		all = append(all, a.entries[a.next:]...)
	}
	all = append(all, a.entries[:a.next]...)
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	return append([]AuditEntry{}, all...)
}

// Audit returns the last n audited calls, oldest first (n ≤ 0: all kept).
func (c *Controller) Audit(n int) []AuditEntry { return c.audit.last(n) }
