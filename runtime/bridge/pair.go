package bridge

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// PairMethod is the handshake's method.
const PairMethod = "_org.agentos/pair"

// Reasons of a refused handshake (details.reason).
const (
	ReasonPairingRequired = "pairing_required"
	ReasonInvalidCode     = "invalid_code"
	ReasonCodeExpired     = "code_expired"
	ReasonTooManyAttempts = "too_many_attempts"
	ReasonInvalidToken    = "invalid_token"
	ReasonDisabled        = "disabled"
)

// reasonText is the message after "auth_required: " for each reason.
var reasonText = map[string]string{
	ReasonPairingRequired: "the first message must be a _org.agentos/pair request carrying a pairing code or token",
	ReasonInvalidCode:     "wrong pairing code, or no pairing code is active; generate one on the phone",
	ReasonCodeExpired:     "the pairing code has expired; generate a new one on the phone",
	ReasonTooManyAttempts: "too many wrong pairing codes; this code is void, generate a new one on the phone",
	ReasonInvalidToken:    "this computer is no longer paired (revoked, or desktop access was turned off); pair again with a new code",
	ReasonDisabled:        "desktop access is turned off on the phone",
}

// PairRequest is a parsed pair line.
type PairRequest struct {
	// ID is the request's id, echoed in the reply.
	ID json.RawMessage
	// Code is the submitted code with spaces and '-' removed; Token the
	// submitted token. Exactly one is set.
	Code  string
	Token string
	// HasCode tells a code from a token (either may be an empty string).
	HasCode bool
	Label   string
}

// PairError is a refused handshake: the reply's id (null when the line
// had no usable id) and the reason.
type PairError struct {
	ID     json.RawMessage
	Reason string
}

func (e *PairError) Error() string { return "auth_required: " + reasonText[e.Reason] }

// Wire is the reply line's error object.
func (e *PairError) Wire() errcode.WireError {
	return errcode.New(errcode.AuthRequired, reasonText[e.Reason]).WithDetails(map[string]any{"reason": e.Reason}).Wire()
}

var nullID = json.RawMessage("null")

// ParsePairLine reads the first line of a desktop connection. Anything
// but a well-formed pair request is pairing_required, answered with the
// request's id when it has a usable one (e.g. an initialize sent first).
func ParsePairLine(line []byte) (PairRequest, *PairError) {
	required := func(id json.RawMessage) (PairRequest, *PairError) {
		return PairRequest{}, &PairError{ID: id, Reason: ReasonPairingRequired}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil || m == nil {
		return required(nullID)
	}
	id := nullID
	if raw, ok := m["id"]; ok && primitiveID(raw) {
		id = bytes.TrimSpace(raw)
	}
	var jsonrpc string
	if json.Unmarshal(m["jsonrpc"], &jsonrpc) != nil || jsonrpc != "2.0" {
		return required(id)
	}
	if string(id) == "null" {
		return required(nullID)
	}
	var method string
	if json.Unmarshal(m["method"], &method) != nil || method != PairMethod {
		return required(id)
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(m["params"], &p) != nil || p == nil {
		return required(id)
	}
	if v, ok := p["version"]; ok {
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if dec.Decode(&n) != nil || n.String() != "1" {
			return required(id)
		}
	}
	code, hasCode := p["code"]
	token, hasToken := p["token"]
	if hasCode == hasToken {
		return required(id)
	}
	req := PairRequest{ID: id, HasCode: hasCode, Label: defaultLabel}
	var s string
	if hasCode {
		if json.Unmarshal(code, &s) != nil {
			return required(id)
		}
		req.Code = strings.Map(func(r rune) rune {
			if r == ' ' || r == '-' {
				return -1
			}
			return r
		}, s)
	} else {
		if json.Unmarshal(token, &s) != nil {
			return required(id)
		}
		req.Token = s
	}
	if raw, ok := p["label"]; ok {
		var l string
		if json.Unmarshal(raw, &l) == nil {
			if c := cleanLabel(l); c != "" {
				req.Label = c
			}
		}
	}
	return req, nil
}

// primitiveID: a JSON string or number (null is handled by the caller).
func primitiveID(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return false
	}
	if string(b) == "null" {
		return true
	}
	if b[0] == '"' {
		var s string
		return json.Unmarshal(b, &s) == nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) && dec.Decode(&n) == nil
}

const (
	defaultLabel  = "desktop"
	maxLabelChars = 64
)

// cleanLabel removes control characters, trims and keeps at most 64
// characters.
func cleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxLabelChars {
		s = strings.TrimSpace(string(r[:maxLabelChars]))
	}
	return s
}
