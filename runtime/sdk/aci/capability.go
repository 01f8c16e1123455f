package aci

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
)

// Types, values and codes of the wire, under the names app code uses.
type (
	// Type is a declared param or result type.
	Type = wire.Type
	// Flag is a capability's behaviour flag.
	Flag = wire.Flag
	// Value is one typed value.
	Value = wire.Value
	// Bundle is a call's params or result.
	Bundle = wire.Bundle
	// Code is an ACI error code.
	Code = wire.Code
	// Error is a failed call with its code.
	Error = wire.Error
)

const (
	TypeString      = wire.TypeString
	TypeInt         = wire.TypeInt
	TypeBoolean     = wire.TypeBoolean
	TypeDouble      = wire.TypeDouble
	TypeBytes       = wire.TypeBytes
	TypeStringArray = wire.TypeStringArray

	// FlagBackground: the capability runs without the app in front.
	FlagBackground = wire.FlagBackground
	// FlagNoUI: the capability needs no screen.
	FlagNoUI = wire.FlagNoUI
	// FlagDangerous: every call needs the owner's confirmation.
	FlagDangerous = wire.FlagDangerous

	CodeBadRequest         = wire.BadRequest
	CodePermissionDenied   = wire.PermissionDenied
	CodeCapabilityNotFound = wire.CapabilityNotFound
	CodeInternal           = wire.Internal
	CodeUnsupported        = wire.Unsupported
	CodeTimeout            = wire.Timeout
	CodePreconditionFailed = wire.PreconditionFailed
)

// Required and Optional say whether a param must be given.
const (
	Required = true
	Optional = false
)

// String, Int, Double, Bool, Bytes and Strings make result values.
func String(s string) Value     { return wire.String(s) }
func Int(i int64) Value         { return wire.Int(i) }
func Double(f float64) Value    { return wire.Double(f) }
func Bool(b bool) Value         { return wire.Bool(b) }
func Bytes(b []byte) Value      { return wire.Bytes(b) }
func Strings(ss []string) Value { return wire.Strings(ss) }

// Errorf returns an error that reaches the controller with code c and the
// formatted message.
func Errorf(c Code, format string, args ...any) error { return wire.Errorf(c, format, args...) }

// Handler runs one call. ctx ends at the capability's timeout, when the
// controller gives up (closes the connection) or when the server stops;
// a handler that blocks must watch it. The Bundle is the result (its keys
// must be declared); an error made with Errorf fails the call with its
// code, any other error or a panic with Internal.
type Handler func(ctx context.Context, call *Call) (Bundle, error)

// DefaultTimeout is a synchronous call's budget when the capability
// declares none (the controller's default).
const DefaultTimeout = wire.DefaultCallTimeout

// MaxTimeout is the longest Timeout a capability may declare.
const MaxTimeout = 10 * time.Minute

// Errors of building a capability.
var (
	ErrBadID              = errors.New("id must be 1-64 characters of [A-Za-z][A-Za-z0-9_.-]*")
	ErrNoDescription      = errors.New("a capability needs a description for the model")
	ErrDescriptionVersion = errors.New("the description is a version string: pass what the capability does (upstream's create(id, \"1.0\") bug)")
	ErrBadType            = errors.New("type must be string, int, boolean, double, bytes or string_array")
	ErrDuplicate          = errors.New("declared twice")
	ErrNoHandler          = errors.New("a capability needs a handler")
	ErrBadTimeout         = fmt.Errorf("timeout must be between 1 ms and %s", MaxTimeout)
)

// Capability is a capability being declared: NewCapability, then the
// chained calls, then Server.Add. The first mistake is kept and Add
// returns it, so a bad declaration never serves half-declared.
type Capability struct {
	decl    wire.Capability
	handler Handler
	err     error
}

// NewCapability starts a capability. description tells the model what it
// does (refused when it is a version string such as "1.0").
func NewCapability(id, description string) *Capability {
	c := &Capability{decl: wire.Capability{ID: id, Version: wire.DefaultCapabilityVersion, Description: description}}
	switch {
	case !wire.ValidID(id):
		c.fail(fmt.Errorf("capability %q: %w", clip(id), ErrBadID))
	case description == "":
		c.fail(fmt.Errorf("capability %s: %w", id, ErrNoDescription))
	case wire.LooksLikeVersion(description):
		c.fail(fmt.Errorf("capability %s: %w", id, ErrDescriptionVersion))
	case len(description) > wire.MaxDescription:
		c.fail(fmt.Errorf("capability %s: description longer than %d bytes", id, wire.MaxDescription))
	}
	return c
}

func (c *Capability) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// ID is the capability's id.
func (c *Capability) ID() string { return c.decl.ID }

// Param declares a param.
func (c *Capability) Param(name string, t Type, required bool, description string) *Capability {
	c.decl.Params = c.declare(c.decl.Params, "param", name, t, required, description)
	return c
}

// Result declares a result key.
func (c *Capability) Result(name string, t Type, description string) *Capability {
	c.decl.Results = c.declare(c.decl.Results, "result", name, t, false, description)
	return c
}

// Large declares a large text result key: key (string), its attachment
// key_gz (bytes) and key_len (int), and "truncated" (boolean), which
// Call.PutLarge fills by the ACI rules.
func (c *Capability) Large(key, description string) *Capability {
	c.Result(key, TypeString, description+" Cut at 150,000 characters with a marker when longer.")
	c.Result(key+wire.SuffixGzip, TypeBytes, "The full "+key+", gzip-compressed, when it was cut and compresses to at most 900,000 bytes.")
	c.Result(key+wire.SuffixLen, TypeInt, "The full length of "+key+" in characters, beside "+key+wire.SuffixGzip+".")
	if _, ok := c.decl.Result(wire.KeyTruncated); !ok {
		c.Result(wire.KeyTruncated, TypeBoolean, "Whether a value was cut.")
	}
	return c
}

func (c *Capability) declare(list []wire.Param, what, name string, t Type, required bool, description string) []wire.Param {
	switch {
	case !wire.ValidID(name):
		c.fail(fmt.Errorf("capability %s: %s %q: %w", c.decl.ID, what, clip(name), ErrBadID))
	case !t.Known():
		c.fail(fmt.Errorf("capability %s: %s %s: %q: %w", c.decl.ID, what, name, clip(string(t)), ErrBadType))
	case slices.ContainsFunc(list, func(p wire.Param) bool { return p.Name == name }):
		c.fail(fmt.Errorf("capability %s: %s %s: %w", c.decl.ID, what, name, ErrDuplicate))
	case len(list) >= wire.MaxParams:
		c.fail(fmt.Errorf("capability %s: more than %d %ss", c.decl.ID, wire.MaxParams, what))
	case name == paramUserConfirmed || name == paramToken:
		c.fail(fmt.Errorf("capability %s: %s %s is reserved for the controller", c.decl.ID, what, name))
	default:
		return append(list, wire.Param{Name: name, Type: t, Required: required, Description: description})
	}
	return list
}

// Flags adds behaviour flags.
func (c *Capability) Flags(fs ...Flag) *Capability {
	for _, f := range fs {
		if !slices.Contains(c.decl.Flags, f) {
			c.decl.Flags = append(c.decl.Flags, f)
		}
	}
	return c
}

// Permission names a permission the calling app must hold; the runtime
// checks it against the app on whose behalf it calls.
func (c *Capability) Permission(p string) *Capability {
	c.decl.RequirePermission = p
	return c
}

// UserConfirm makes every call need the owner's confirmation.
func (c *Capability) UserConfirm() *Capability {
	c.decl.RequireUserConfirm = true
	return c
}

// Timeout sets a synchronous call's budget (DefaultTimeout otherwise):
// the controller waits that long and the handler's context ends then.
func (c *Capability) Timeout(d time.Duration) *Capability {
	if d < time.Millisecond || d > MaxTimeout {
		c.fail(fmt.Errorf("capability %s: %w", c.decl.ID, ErrBadTimeout))
		return c
	}
	c.decl.SyncTimeout = d
	return c
}

// Handle sets the handler.
func (c *Capability) Handle(h Handler) *Capability {
	c.handler = h
	return c
}

// Declaration is the capability as getCapabilities describes it.
func (c *Capability) Declaration() wire.Capability { return c.decl }

// Err is the first mistake of the declaration, nil when it is sound.
func (c *Capability) Err() error {
	if c.err == nil && c.handler == nil {
		return fmt.Errorf("capability %s: %w", c.decl.ID, ErrNoHandler)
	}
	return c.err
}

func (c *Capability) timeout() time.Duration {
	if c.decl.SyncTimeout > 0 {
		return c.decl.SyncTimeout
	}
	return DefaultTimeout
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
