package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Code is a code of the one ACI code space: upstream's AAR numbers for
// the base codes and the aci-core branch's governance numbers (15xx,
// 24xx, 25xx) for the rest, plus two of this implementation's (413, 501).
// Callees built with runtime/sdk/aci send these numbers; Classify reads
// every upstream numbering into them. A Code is an error, so errors.Is
// matches an *Error against it.
type Code int

// The codes. Upstream names in parentheses where they differ.
const (
	OK                 Code = 0
	RequestNull        Code = -1
	BadRequest         Code = 400
	PermissionDenied   Code = 403
	CapabilityNotFound Code = 404
	// PreconditionFailed is upstream's later controller code for a call
	// whose prerequisites (other capabilities) are missing.
	PreconditionFailed Code = 412
	// ResultTooLarge: the result does not fit one frame (ours).
	ResultTooLarge Code = 413
	Internal       Code = 500 // INTERNAL_ERROR
	// Unsupported: the capability is declared but this callee cannot do
	// it (ours; the browser's renderer-only capabilities).
	Unsupported             Code = 501
	ServiceUnavailable      Code = 503
	Timeout                 Code = 504
	ConnectionDied          Code = 505 // BINDER_DIED
	ServiceUnbound          Code = 1503
	ProtocolNegotiateFailed Code = 1505 // PROTOCOL_NEGOTIATE_FAIL
	CallFailed              Code = 1506
	BadParam                Code = 2400 // BAD_REQUEST_PARAM
	MissingField            Code = 2401
	UnsupportedProtocol     Code = 2403
	HTTPClientError         Code = 2500
	HTTPServerError         Code = 2510
	HTTPDNSFailed           Code = 2521
	HTTPTLSError            Code = 2522
	HTTPConnectFailed       Code = 2523
	HTTPTooLarge            Code = 2524
	HTTPUnknown             Code = 2599
)

// Variant names an upstream numbering.
type Variant string

const (
	// VariantAAR is the original compiled aci-core (and the aci-core
	// branch's base codes): 0, -1, 400…505. Ours.
	VariantAAR Variant = "aar"
	// VariantMain is main's rebuilt :aci-core and the later AidlAciError: 0–8.
	VariantMain Variant = "main"
	// VariantGovernance is the aci-core branch's "ACI 2.0" codes.
	VariantGovernance Variant = "governance"
	// VariantQuro is the controller app's QuroAciErrors (main app callee).
	VariantQuro Variant = "quro"
)

// Alias is one upstream number of a Code.
type Alias struct {
	Variant Variant
	Number  int
	Name    string
}

// Row is one line of the code table.
type Row struct {
	Code Code
	Name string
	// Text is the short English meaning (the AAR's message() where it has one).
	Text string
	// Tool is the runtime's error code for a call that ended with Code
	// (what the model is told; runtime/errcode).
	Tool errcode.Code
	// Retryable says the same call may succeed later.
	Retryable bool
	// Upstream are the numbers upstream uses for it.
	Upstream []Alias
}

func aar(n int, name string) Alias   { return Alias{VariantAAR, n, name} }
func main8(n int, name string) Alias { return Alias{VariantMain, n, name} }
func gov(n int, name string) Alias   { return Alias{VariantGovernance, n, name} }
func quro(n int, name string) Alias  { return Alias{VariantQuro, n, name} }

// table is the code space (documented in the package doc and tested
// against testdata/codes.json, the spec's tables §6.1–§6.3).
var table = []Row{
	{OK, "SUCCESS", "OK", "", false, []Alias{aar(0, "SUCCESS"), main8(0, "SUCCESS")}},
	{RequestNull, "REQUEST_NULL", "Request is null", errcode.ToolFailed, false, []Alias{aar(-1, "REQUEST_NULL"), main8(1, "REQUEST_NULL")}},
	{BadRequest, "BAD_REQUEST", "Bad request format", errcode.ToolFailed, false, []Alias{aar(400, "BAD_REQUEST"), main8(2, "BAD_REQUEST")}},
	{PermissionDenied, "PERMISSION_DENIED", "Permission denied", errcode.ToolDenied, false, []Alias{aar(403, "PERMISSION_DENIED"), main8(3, "PERMISSION_DENIED")}},
	{CapabilityNotFound, "CAPABILITY_NOT_FOUND", "Capability not found", errcode.ToolFailed, false, []Alias{aar(404, "CAPABILITY_NOT_FOUND"), main8(4, "CAPABILITY_NOT_FOUND")}},
	{PreconditionFailed, "PRECONDITION_FAILED", "Precondition failed", errcode.ToolFailed, false, nil},
	{ResultTooLarge, "RESULT_TOO_LARGE", "Result too large", errcode.ToolResultTooLarge, false, nil},
	{Internal, "INTERNAL_ERROR", "Internal server error", errcode.ToolFailed, false, []Alias{aar(500, "INTERNAL_ERROR"), main8(5, "INTERNAL_ERROR")}},
	{Unsupported, "UNSUPPORTED", "Not supported by this callee", errcode.ToolFailed, false, nil},
	{ServiceUnavailable, "SERVICE_UNAVAILABLE", "Service unavailable", errcode.ToolUnavailable, true, []Alias{aar(503, "SERVICE_UNAVAILABLE"), main8(6, "SERVICE_UNAVAILABLE")}},
	{Timeout, "TIMEOUT", "Request timeout", errcode.ToolTimeout, false, []Alias{aar(504, "TIMEOUT"), main8(7, "TIMEOUT"), quro(1504, "E_TIMEOUT")}},
	{ConnectionDied, "BINDER_DIED", "Binder connection died", errcode.ToolUnavailable, true, []Alias{aar(505, "BINDER_DIED"), main8(8, "BINDER_DIED")}},
	{ServiceUnbound, "SERVICE_UNBOUND", "Service unbound", errcode.ToolUnavailable, true, []Alias{gov(1503, "SERVICE_UNBOUND"), quro(1503, "E_SERVICE_UNBOUND")}},
	{ProtocolNegotiateFailed, "PROTOCOL_NEGOTIATE_FAIL", "Protocol negotiation failed", errcode.ToolUnavailable, false, []Alias{gov(1505, "PROTOCOL_NEGOTIATE_FAIL")}},
	{CallFailed, "CALL_FAILED", "Call failed", errcode.ToolFailed, false, []Alias{gov(1506, "CALL_FAILED")}},
	{BadParam, "BAD_REQUEST_PARAM", "Bad request parameter", errcode.ToolFailed, false, []Alias{gov(2400, "BAD_REQUEST_PARAM"), quro(2400, "E_BAD_REQUEST")}},
	{MissingField, "MISSING_FIELD", "Missing field", errcode.ToolFailed, false, []Alias{gov(2401, "MISSING_FIELD")}},
	{UnsupportedProtocol, "UNSUPPORTED_PROTOCOL", "Unsupported protocol", errcode.ToolFailed, false, []Alias{gov(2403, "UNSUPPORTED_PROTOCOL")}},
	{HTTPClientError, "HTTP_CLIENT_ERROR", "HTTP client error (4xx)", errcode.ToolFailed, false, []Alias{gov(2500, "HTTP_CLIENT_ERROR"), quro(2500, "E_HTTP_CLIENT")}},
	{HTTPServerError, "HTTP_SERVER_ERROR", "HTTP server error (5xx)", errcode.ToolFailed, true, []Alias{gov(2510, "HTTP_SERVER_ERROR")}},
	{HTTPDNSFailed, "HTTP_DNS_FAILED", "DNS lookup failed", errcode.ToolFailed, true, []Alias{gov(2521, "HTTP_DNS_FAILED")}},
	{HTTPTLSError, "HTTP_TLS_ERROR", "TLS error", errcode.ToolFailed, false, []Alias{gov(2522, "HTTP_TLS_ERROR"), quro(2520, "E_HTTP_TLS")}},
	{HTTPConnectFailed, "HTTP_CONNECT_FAILED", "Connection failed", errcode.ToolFailed, true, []Alias{gov(2523, "HTTP_CONNECT_FAILED")}},
	{HTTPTooLarge, "HTTP_TOO_LARGE", "Response too large", errcode.ToolFailed, false, []Alias{gov(2524, "HTTP_TOO_LARGE")}},
	// 2599 is HTTP_UNKNOWN in the governance codes and E_INTERNAL in
	// QuroAciErrors: Classify reads a structured message's layer to
	// tell them apart.
	{HTTPUnknown, "HTTP_UNKNOWN", "Unknown HTTP failure", errcode.ToolFailed, false, []Alias{gov(2599, "HTTP_UNKNOWN"), quro(2599, "E_INTERNAL")}},
}

// byCode and byNumber index the table; a number two rows claim is a
// table bug.
var byCode, byNumber = func() (map[Code]Row, map[int]Code) {
	rows, nums := map[Code]Row{}, map[int]Code{}
	for _, r := range table {
		rows[r.Code] = r
		for _, a := range r.Upstream {
			if c, dup := nums[a.Number]; dup && c != r.Code {
				panic(fmt.Sprintf("aci: upstream number %d mapped twice", a.Number))
			}
			nums[a.Number] = r.Code
		}
		nums[int(r.Code)] = r.Code
	}
	return rows, nums
}()

// Table returns a copy of the code table.
func Table() []Row { return append([]Row(nil), table...) }

// Lookup returns c's row.
func (c Code) Lookup() (Row, bool) {
	r, ok := byCode[c]
	return r, ok
}

// Known reports whether c is in the table.
func (c Code) Known() bool { _, ok := byCode[c]; return ok }

// Error makes a Code an error (for errors.Is).
func (c Code) Error() string {
	if r, ok := byCode[c]; ok {
		return fmt.Sprintf("aci %d %s", int(c), r.Name)
	}
	return fmt.Sprintf("aci %d", int(c))
}

// Tool is the runtime error code the model sees for c (tool_failed for
// codes outside the table).
func (c Code) Tool() errcode.Code {
	if r, ok := byCode[c]; ok && r.Tool != "" {
		return r.Tool
	}
	return errcode.ToolFailed
}

// Structured is upstream's structured error message (QuroAciErrors):
// errorMessage holding {"aci_error":true,"code":N,"message":…,
// "suggestion":…,"layer":"binder"|"http"|"protocol"}.
type Structured struct {
	Code       int    `json:"code"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
	Layer      string `json:"layer,omitempty"`
}

// Layers of a structured error.
const (
	LayerBinder   = "binder"
	LayerHTTP     = "http"
	LayerProtocol = "protocol"
)

// ParseStructured reads a structured error message; ok is false for any
// other text (which is then shown as it is), as upstream's parse().
func ParseStructured(msg string) (*Structured, bool) {
	t := strings.TrimSpace(msg)
	if !strings.HasPrefix(t, "{") {
		return nil, false
	}
	ms, err := objectMembers([]byte(t))
	if err != nil {
		return nil, false
	}
	var s Structured
	flagged := false
	for _, m := range ms {
		switch m.key {
		case "aci_error":
			flagged = json.Unmarshal(m.val, &flagged) == nil && flagged
		case "code":
			var n json.Number
			if json.Unmarshal(m.val, &n) == nil {
				if i, err := n.Int64(); err == nil {
					s.Code = int(i)
				}
			}
		case "message":
			s.Message, _ = optString(m.val)
		case "suggestion":
			s.Suggestion, _ = optString(m.val)
		case "layer":
			s.Layer, _ = optString(m.val)
		}
	}
	if !flagged {
		return nil, false
	}
	return &s, true
}

// String encodes s as upstream's structured message, aci_error first.
func (s *Structured) String() string {
	b, _ := json.Marshal(struct {
		ACIError bool `json:"aci_error"`
		*Structured
	}{true, s})
	return string(b)
}

// Error is a failed call as the controller understands it: the code in
// this space, what the callee sent, and the structured detail if any.
type Error struct {
	Code Code
	// Raw is the errorCode on the wire.
	Raw int
	// Known is false when Raw is in no upstream numbering (Code is then
	// Internal).
	Known   bool
	Message string
	// Detail is the structured message, when errorMessage was one
	// (Message is then its message).
	Detail *Structured
}

func (e *Error) Error() string {
	s := e.Code.Error()
	if e.Raw != int(e.Code) {
		s += fmt.Sprintf(" (sent as %d)", e.Raw)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Detail != nil && e.Detail.Suggestion != "" {
		s += " (" + e.Detail.Suggestion + ")"
	}
	return s
}

// Is matches a Code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// Errorf returns an *Error of code c with a formatted message.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Raw: int(c), Known: c.Known(), Message: fmt.Sprintf(format, args...)}
}

// Classify reads a failed response's errorCode and errorMessage, from a
// callee of any upstream build: every numbering of the table maps to its
// Code (the numberings do not overlap except 2599, told apart by the
// structured layer: "http" or none is HTTPUnknown, another layer is
// Internal). A structured message's own code wins over errorCode when
// both are known. Unknown numbers are Internal with Known false; a
// failure sent with errorCode 0 is Internal.
func Classify(raw int, message string) *Error {
	e := &Error{Raw: raw, Message: message}
	num := raw
	if s, ok := ParseStructured(message); ok {
		e.Detail = s
		if s.Message != "" {
			e.Message = s.Message
		}
		if _, known := byNumber[s.Code]; known && s.Code != 0 {
			num = s.Code
		}
	}
	c, known := byNumber[num]
	switch {
	case !known:
		e.Code, e.Known = Internal, false
	case c == OK:
		e.Code, e.Known = Internal, true
	default:
		e.Code, e.Known = c, true
	}
	if num == int(HTTPUnknown) && e.Detail != nil && e.Detail.Layer != "" && e.Detail.Layer != LayerHTTP {
		e.Code = Internal
	}
	return e
}
