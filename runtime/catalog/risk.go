package catalog

import (
	"fmt"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Risk is a tool's risk level (spec §5.1). The zero value is not a level;
// code that meets it treats it as RiskHigh (fail closed).
type Risk uint8

const (
	RiskRead Risk = iota + 1
	RiskWrite
	RiskHigh
)

// String returns "READ", "WRITE" or "HIGH" ("" for the zero value).
func (r Risk) String() string {
	switch r {
	case RiskRead:
		return "READ"
	case RiskWrite:
		return "WRITE"
	case RiskHigh:
		return "HIGH"
	}
	return ""
}

// Valid reports whether r is one of the three levels.
func (r Risk) Valid() bool { return r >= RiskRead && r <= RiskHigh }

// ParseRisk reads "READ", "WRITE" or "HIGH".
func ParseRisk(s string) (Risk, error) {
	switch s {
	case "READ":
		return RiskRead, nil
	case "WRITE":
		return RiskWrite, nil
	case "HIGH":
		return RiskHigh, nil
	}
	return 0, fmt.Errorf("parse risk: %w", errBadRisk)
}

var errBadRisk = errcode.New(errcode.InvalidParams, "risk must be READ, WRITE or HIGH")

// MarshalText implements encoding.TextMarshaler.
func (r Risk) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("marshal risk %d: %w", r, errBadRisk)
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MayAlwaysAllow reports whether a tool of this risk may ever be set to
// "always allow" (spec §5.1: everything but HIGH).
func (r Risk) MayAlwaysAllow() bool { return r == RiskRead || r == RiskWrite }

// MaySessionRemember reports whether "don't ask again in this
// conversation" may be offered (spec §5.1: WRITE only).
func (r Risk) MaySessionRemember() bool { return r == RiskWrite }

// Annotations are the MCP tool annotations that matter for risk and for
// how a call is shown (Entry.Hints). A nil pointer means the server did
// not set the hint; a missing destructiveHint is NOT treated as true.
// OpenWorldHint never changes the risk.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// EffectiveRisk is RiskPolicy.effectiveRisk (spec §5.1): the declared
// level when an AgentOS-trusted source declares one (built-in tools),
// else WRITE (every third-party MCP tool); an explicit destructiveHint
// true raises it to HIGH; readOnlyHint never lowers it.
func EffectiveRisk(declared *Risk, a Annotations) Risk {
	r := RiskWrite
	if declared != nil && declared.Valid() {
		r = *declared
	}
	if a.DestructiveHint != nil && *a.DestructiveHint {
		r = RiskHigh
	}
	return r
}

// SessionRisk is the risk of a tool of a caller-supplied MCP server:
// at least WRITE, HIGH when destructiveHint is explicitly true, and
// readOnlyHint ignored (spec §2.9). Such tools are therefore hidden in
// read_only and chat.
func SessionRisk(a Annotations) Risk { return EffectiveRisk(nil, a) }
