package wire

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Protocol negotiation (upstream's "ACI 2.0", in the app layer): a peer
// advertises the capability ProtocolCapability whose results say which
// protocol versions it speaks.
const (
	ProtocolCapability = "aci_protocol"
	ProtocolV1         = "aci-protocol-v1"
	ProtocolSemver     = "1.0.0"
	// Result keys of ProtocolCapability.
	ResultProtocolVersion = "protocol_version"
	ResultSemver          = "semver"
	ResultSupported       = "supported" // comma-separated
)

// Supported are the protocol versions this side speaks, preferred first.
var Supported = []string{ProtocolV1}

// ErrNoCommonProtocol means the peer speaks none of Supported.
var ErrNoCommonProtocol = errors.New("aci: no protocol version in common")

// Negotiate picks the protocol to speak with a peer whose "supported"
// result is peer: the first of Supported that the peer lists. A peer
// that lists nothing (or has no aci_protocol) speaks v1. No overlap is
// ErrNoCommonProtocol (upstream stored its default anyway).
func Negotiate(peer string) (string, error) {
	var theirs []string
	for _, p := range strings.Split(peer, ",") {
		if p = strings.TrimSpace(p); p != "" {
			theirs = append(theirs, p)
		}
	}
	if len(theirs) == 0 {
		return ProtocolV1, nil
	}
	for _, s := range Supported {
		if slices.Contains(theirs, s) {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w: peer speaks %s", ErrNoCommonProtocol, clip(peer))
}

// ProtocolResult is what a callee's aci_protocol returns.
func ProtocolResult() Bundle {
	return Bundle{
		ResultProtocolVersion: String(ProtocolV1),
		ResultSemver:          String(ProtocolSemver),
		ResultSupported:       String(strings.Join(Supported, ",")),
	}
}

// ProtocolCapabilityDecl is aci_protocol as a callee declares it (flag
// no_ui only, as upstream).
func ProtocolCapabilityDecl() Capability {
	return Capability{
		ID:          ProtocolCapability,
		Version:     DefaultCapabilityVersion,
		Description: "Report the ACI protocol versions this app speaks, for negotiation.",
		Results: []Param{
			{Name: ResultProtocolVersion, Type: TypeString, Description: "The protocol this app prefers."},
			{Name: ResultSemver, Type: TypeString, Description: "Its semantic version."},
			{Name: ResultSupported, Type: TypeString, Description: "Every protocol it speaks, comma-separated."},
		},
		Flags: []Flag{FlagNoUI},
	}
}

// Rebind backoff (upstream's later controller): 800 ms × 2ⁿ, the
// exponent capped at 4, clamped to 8 s.
const (
	RebindBase = 800 * time.Millisecond
	RebindMax  = 8 * time.Second
)

// RebindDelay is the wait before rebind attempt n (0 first). It never
// overflows or goes negative, whatever n is (upstream's 1 shl 31 bug).
func RebindDelay(n int) time.Duration {
	n = max(0, min(n, 4))
	return min(RebindBase<<n, RebindMax)
}
