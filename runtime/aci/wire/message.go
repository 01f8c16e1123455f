package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Method is the operation a request asks for (upstream's IACIService
// methods).
type Method string

const (
	MethodCall            Method = "call"
	MethodCallAsync       Method = "callAsync"
	MethodGetCapabilities Method = "getCapabilities"
	MethodPing            Method = "ping"
)

// Methods are the methods, in upstream's transaction order.
var Methods = []Method{MethodCall, MethodCallAsync, MethodGetCapabilities, MethodPing}

// DefaultRequestVersion is a request's version when it sends none.
const DefaultRequestVersion = "1.0"

// Limits of a request's strings.
const (
	MaxCallIDLen    = 128
	MaxCallerPkgLen = 255
)

// Request is what the controller sends (upstream's ACIRequest plus the
// method, which Binder carried as the transaction code).
type Request struct {
	// Method is what to do; "" is MethodCall.
	Method     Method `json:"method,omitempty"`
	Capability string `json:"capability,omitempty"`
	// Version is the request version; nobody checks it (upstream neither).
	Version string `json:"version,omitempty"`
	Params  Bundle `json:"params,omitempty"`
	// CallID is echoed in every response frame.
	CallID string `json:"callId,omitempty"`
	// CallerPkg is what the sender says it is; never an identity. The
	// SDK trusts it only from the runtime's uid, as the app on whose
	// behalf the runtime calls.
	CallerPkg string `json:"callerPkg,omitempty"`
}

// Progress is one progress report of a callAsync.
type Progress struct {
	// Percent is 0–100 and never goes down within a call.
	Percent int    `json:"percent"`
	Message string `json:"message,omitempty"`
}

// Response is what the callee sends back (upstream's ACIResponse plus the
// answers of getCapabilities and ping, and progress frames).
type Response struct {
	Success bool   `json:"success"`
	Result  Bundle `json:"result,omitempty"`
	// ErrorCode is 0 on success; Classify reads it.
	ErrorCode    int    `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	CallID       string `json:"callId,omitempty"`
	// Capabilities is getCapabilities' answer: one JSON object per element.
	Capabilities []string `json:"capabilities,omitempty"`
	// Pong is ping's answer.
	Pong bool `json:"pong,omitempty"`
	// Progress marks a progress frame of a callAsync; the result follows.
	Progress *Progress `json:"progress,omitempty"`
}

// Err returns the failure of a response as an *Error, nil on success.
func (r *Response) Err() error {
	if r.Success {
		return nil
	}
	return Classify(r.ErrorCode, r.ErrorMessage)
}

// Failure returns a failed response of code c.
func Failure(c Code, message string) *Response {
	return &Response{ErrorCode: int(c), ErrorMessage: message}
}

// ErrMessage is a frame whose payload is not a valid request or response.
var ErrMessage = errors.New("aci: bad message")

var (
	requestKeys  = []string{"method", "capability", "version", "params", "callId", "callerPkg"}
	responseKeys = []string{"success", "result", "errorCode", "errorMessage", "callId", "capabilities", "pong", "progress"}
)

// EncodeRequest returns r as a frame payload.
func EncodeRequest(r *Request) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}

// DecodeRequest reads a request payload strictly: one object, known
// case-sensitive keys only, none repeated, a known method, a capability
// id for call and callAsync, bounded strings.
func DecodeRequest(payload []byte) (*Request, error) {
	if err := checkKeys(payload, requestKeys); err != nil {
		return nil, err
	}
	var r Request
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMessage, err)
	}
	if r.Method == "" {
		r.Method = MethodCall
	}
	switch {
	case !slices.Contains(Methods, r.Method):
		return nil, fmt.Errorf("%w: %q is not a method", ErrMessage, clip(string(r.Method)))
	case (r.Method == MethodCall || r.Method == MethodCallAsync) && r.Capability == "":
		return nil, fmt.Errorf("%w: no capability", ErrMessage)
	case len(r.CallID) > MaxCallIDLen:
		return nil, fmt.Errorf("%w: callId longer than %d bytes", ErrMessage, MaxCallIDLen)
	case len(r.CallerPkg) > MaxCallerPkgLen:
		return nil, fmt.Errorf("%w: callerPkg longer than %d bytes", ErrMessage, MaxCallerPkgLen)
	case len(r.Capability) > 4*MaxIDLen:
		return nil, fmt.Errorf("%w: capability longer than %d bytes", ErrMessage, 4*MaxIDLen)
	}
	return &r, nil
}

// EncodeResponse returns r as a frame payload.
func EncodeResponse(r *Response) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return b, nil
}

// DecodeResponse reads a response payload with DecodeRequest's strictness;
// a progress frame's percent must be 0–100.
func DecodeResponse(payload []byte) (*Response, error) {
	if err := checkKeys(payload, responseKeys); err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMessage, err)
	}
	if p := r.Progress; p != nil && (p.Percent < 0 || p.Percent > 100) {
		return nil, fmt.Errorf("%w: progress %d is outside 0–100", ErrMessage, p.Percent)
	}
	return &r, nil
}

// checkKeys accepts one JSON object whose keys are all in allowed, each
// once, exactly as spelt.
func checkKeys(payload []byte, allowed []string) error {
	ms, err := objectMembers(payload)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMessage, err)
	}
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if !slices.Contains(allowed, m.key) {
			return fmt.Errorf("%w: unknown key %q (keys are case-sensitive)", ErrMessage, clip(m.key))
		}
		if seen[m.key] {
			return fmt.Errorf("%w: key %q repeated", ErrMessage, m.key)
		}
		seen[m.key] = true
	}
	return nil
}
