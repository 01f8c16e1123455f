// Package acitest is the ACI test app: a controlled app whose
// capabilities exist to be refused or confirmed — a dangerous one that
// says whether the owner confirmed it and counts its runs, and one the
// app's own allow-list hook (permission layer 3) always refuses, one
// that needs a permission of the calling app (layer 4), and whoami, which
// reports the caller as the kernel and the runtime name it (layer 2).
package acitest

import (
	"context"
	"sync/atomic"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/aci"
)

// Name is the app's ACI server.
const Name = "acitest"

// Capability ids.
const (
	Dangerous = "danger_wipe"
	Runs      = "runs"
	Locked    = "locked"
	// Guarded needs the permission GuardPermission of the app the
	// runtime calls for (permission layer 4).
	Guarded         = "guarded"
	GuardPermission = "contacts"
	// Whoami reports the caller as the SDK hands it to a handler: the
	// kernel's uid, whether that is the runtime, the app the runtime
	// calls for, and the callerPkg claimed on the wire.
	Whoami = "whoami"
)

// New returns the app's server. Allow refuses Locked to every caller:
// the callee's hook is the last word on its own capabilities.
func New(opts *aci.Options) (*aci.Server, error) {
	var o aci.Options
	if opts != nil {
		o = *opts
	}
	o.Allow = func(_ context.Context, _ aci.Caller, c wire.Capability) error {
		if c.ID == Locked {
			return aci.Errorf(aci.CodePermissionDenied, "%s is on no caller's allow-list", Locked)
		}
		return nil
	}
	srv := aci.NewServer(Name, &o)
	var runs atomic.Int64
	caps := []*aci.Capability{
		aci.NewCapability(Dangerous, "Pretend to wipe a scratch area; every call needs the owner's confirmation.").
			Result("confirmed", aci.TypeBoolean, "Whether the runtime passed the owner's confirmation.").
			Flags(aci.FlagBackground, aci.FlagNoUI, aci.FlagDangerous).
			Handle(func(_ context.Context, c *aci.Call) (aci.Bundle, error) {
				runs.Add(1)
				return aci.Bundle{"confirmed": aci.Bool(c.UserConfirmed)}, nil
			}),
		aci.NewCapability(Runs, "Report how often the dangerous capability ran.").
			Result("runs", aci.TypeInt, "The count since the app started.").
			Flags(aci.FlagBackground, aci.FlagNoUI).
			Handle(func(context.Context, *aci.Call) (aci.Bundle, error) {
				return aci.Bundle{"runs": aci.Int(runs.Load())}, nil
			}),
		aci.NewCapability(Guarded, "A capability only apps holding the contacts permission may have called.").
			Permission(GuardPermission).
			Flags(aci.FlagBackground, aci.FlagNoUI).
			Handle(func(context.Context, *aci.Call) (aci.Bundle, error) {
				return aci.Bundle{"ran": aci.Bool(true)}, nil
			}),
		aci.NewCapability(Whoami, "Report who calls, as the kernel and the runtime say.").
			Result("uid", aci.TypeInt, "The caller's uid (SO_PEERCRED).").
			Result("runtime", aci.TypeBoolean, "Whether the caller is the AgentOS runtime.").
			Result("on_behalf_of", aci.TypeString, "The app the runtime calls for; empty from any other caller.").
			Result("claimed", aci.TypeString, "The callerPkg on the wire, a claim only.").
			Flags(aci.FlagBackground, aci.FlagNoUI).
			Handle(func(_ context.Context, c *aci.Call) (aci.Bundle, error) {
				return aci.Bundle{"uid": aci.Int(int64(c.Caller.UID)), "runtime": aci.Bool(c.Caller.Runtime),
					"on_behalf_of": aci.String(c.Caller.OnBehalfOf), "claimed": aci.String(c.Caller.ClaimedPkg)}, nil
			}),
		aci.NewCapability(Locked, "A capability the app's allow-list refuses to everyone.").
			Flags(aci.FlagBackground, aci.FlagNoUI).
			Handle(func(context.Context, *aci.Call) (aci.Bundle, error) {
				return aci.Bundle{"ran": aci.Bool(true)}, nil
			}),
	}
	for _, c := range caps {
		if err := srv.Add(c); err != nil {
			return nil, err
		}
	}
	return srv, nil
}
