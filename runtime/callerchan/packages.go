package callerchan

import (
	"context"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/engine"
)

// TableLookup is the Lookup of the runtime's package table: every
// installed package with the uid (several for a shared uid).
func TableLookup(t *apps.Table) Lookup {
	return func(uid int) []callers.App {
		var out []callers.App
		for _, p := range t.ByUID(uid) {
			out = append(out, callers.App{UID: p.UID, Package: p.Name, Label: p.Label, SigningDigest: p.SigningDigest})
		}
		return out
	}
}

// FollowTable applies the package table's change feed until ctx ends: a
// package whose signer changed loses its grant at once (its channels are
// closed; it is asked again, flagged signatureChanged), and forget, when
// set, is called with the ownerKey of every removed package (the caller
// quota drops an uninstalled app's counters). It returns when ctx ends.
func FollowTable(ctx context.Context, t *apps.Table, reg *callers.Registry, forget func(ownerKey string)) {
	since := t.Version()
	// Whatever changed while the runtime was down: compare with memory.
	for _, p := range t.All() {
		reg.Reinstalled(p.Name, p.SigningDigest)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Changed():
		}
		evs, complete := t.Events(since)
		since = t.Version()
		if !complete {
			for _, p := range t.All() {
				reg.Reinstalled(p.Name, p.SigningDigest)
			}
		}
		for _, e := range evs {
			switch e.Kind {
			case apps.SignatureChanged, apps.Installed, apps.Updated:
				reg.Reinstalled(e.Package, e.SigningDigest)
			case apps.Removed:
				if forget != nil {
					forget(engine.Caller{Kind: engine.CallerApp, UID: e.UID}.OwnerKey())
				}
			}
		}
	}
}
