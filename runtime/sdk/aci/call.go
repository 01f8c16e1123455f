package aci

import (
	"io"
	"sync"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
)

// Params the controller reserves: user_confirmed is the runtime's word
// that the owner confirmed this call; _aci_token is upstream's later
// app token, dropped on arrival so no handler or log can echo it.
const (
	paramUserConfirmed = "user_confirmed"
	paramToken         = "_aci_token"
)

// Caller is who is calling, as the kernel reports it.
type Caller struct {
	// UID, GID and PID are the peer's SO_PEERCRED.
	UID, GID, PID int
	// Runtime says the peer is the AgentOS runtime.
	Runtime bool
	// OnBehalfOf is the app the runtime calls for (the request's
	// callerPkg, vouched for by the runtime). It is empty unless the peer
	// is the runtime.
	OnBehalfOf string
	// ClaimedPkg is callerPkg exactly as sent: a claim, never an
	// identity (for logs and compatibility only).
	ClaimedPkg string
}

// Call is one call of a capability.
type Call struct {
	// Capability is the capability's id.
	Capability string
	// CallID is the controller's id of the call.
	CallID string
	// Caller is the kernel-verified caller.
	Caller Caller
	// Params are the arguments, each of its declared type.
	Params Bundle
	// UserConfirmed says the owner confirmed this call.
	UserConfirmed bool
	// Async says the controller waits for progress (callAsync).
	Async bool

	mu       sync.Mutex
	last     int
	progress func(wire.Progress) // nil for a sync call or once answered
}

// String returns a string param ("" when absent).
func (c *Call) String(name string) string { return c.Params[name].Str() }

// Int returns an int param (0 when absent).
func (c *Call) Int(name string) int64 { return c.Params[name].IntVal() }

// Double returns a double param (0 when absent).
func (c *Call) Double(name string) float64 { return c.Params[name].DoubleVal() }

// Bool returns a boolean param (false when absent).
func (c *Call) Bool(name string) bool { return c.Params[name].BoolVal() }

// Bytes returns a bytes param (nil when absent).
func (c *Call) Bytes(name string) []byte { return c.Params[name].BytesVal() }

// Strings returns a string_array param (nil when absent).
func (c *Call) Strings(name string) []string { return c.Params[name].StringsVal() }

// Has reports whether the param was given.
func (c *Call) Has(name string) bool { _, ok := c.Params[name]; return ok }

// IntOr returns an int param, or def when it was not given.
func (c *Call) IntOr(name string, def int64) int64 {
	if !c.Has(name) {
		return def
	}
	return c.Int(name)
}

// StringOr returns a string param, or def when it was not given or empty.
func (c *Call) StringOr(name, def string) string {
	if s := c.String(name); s != "" {
		return s
	}
	return def
}

// BoolOr returns a boolean param, or def when it was not given.
func (c *Call) BoolOr(name string, def bool) bool {
	if !c.Has(name) {
		return def
	}
	return c.Bool(name)
}

// Progress reports progress of an async call: percent is clamped to
// 0–100 and never goes below an earlier report. A sync call ignores it.
// It blocks until the report is written (bounded by a write timeout), as
// upstream's two-way onProgress did, so reports arrive in order.
func (c *Call) Progress(percent int, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.progress == nil {
		return
	}
	percent = max(c.last, min(100, max(0, percent)))
	c.last = percent
	c.progress(wire.Progress{Percent: percent, Message: message})
}

// PutLarge sets key (declared with Capability.Large) in b from text by
// the ACI large-result rules, with the gzip attachment.
func (c *Call) PutLarge(b Bundle, key, text string, marker wire.Marker) {
	wire.PutText(b, key, text, true, marker)
}

// LargeWriter streams a large text result for key (declared with
// Capability.Large) without holding it: write the text, then Put(b).
func (c *Call) LargeWriter(key string, marker wire.Marker) interface {
	io.Writer
	Put(Bundle)
} {
	return wire.NewLarge(key, true, marker)
}

// stopProgress ends progress reporting (the answer is being written).
func (c *Call) stopProgress() {
	c.mu.Lock()
	c.progress = nil
	c.mu.Unlock()
}
