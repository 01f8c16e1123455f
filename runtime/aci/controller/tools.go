package controller

import (
	"encoding/json"
	"sort"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// Entries returns every discovered capability as a catalog entry of kind
// aci (unnamed: catalog.New names them). aci_protocol is plumbing and is
// not offered. The slice is shared; do not modify it.
func (c *Controller) Entries() []catalog.Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.catalog != nil {
		return c.catalog
	}
	out := []catalog.Entry{}
	for k, s := range c.services {
		for i := range s.caps {
			cp := &s.caps[i]
			if cp.ID == wire.ProtocolCapability {
				continue
			}
			out = append(out, Entry(k.pkg, k.server, s.pkg.Label, cp))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ACI.String() < out[j].ACI.String() })
	c.catalog = out
	return out
}

// Version counts changes of the discovered capabilities.
func (c *Controller) Version() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Entry is the catalog entry of one capability: its schema from the
// declared params, WRITE risk, HIGH when every call needs the user's
// confirmation (dangerous or confirm).
func Entry(pkg, server, label string, cp *wire.Capability) catalog.Entry {
	risk := catalog.RiskWrite
	var hints catalog.Annotations
	if cp.NeedsConfirm() && !(faultinject.Enabled && faultinject.Active(faultinject.ACIConfirmNotHigh)) {
		risk = catalog.RiskHigh
		t := true
		hints.DestructiveHint = &t
	}
	title := cp.ID
	if label != "" {
		title = label + ": " + cp.ID
	}
	return catalog.Entry{
		Kind:        catalog.KindACI,
		ACI:         catalog.ACIToolID{Package: pkg, Service: server, Capability: cp.ID},
		Title:       title,
		Description: cp.Description,
		InputSchema: Schema(cp),
		Risk:        risk,
		Hints:       hints,
		Enabled:     true,
		Approval:    catalog.ApprovalAsk,
	}
}

// Schema is the JSON Schema of a capability's params: one property per
// declared param with the JSON type of its declared type, the required
// ones listed, nothing else accepted (wire.ConvertArgs refuses undeclared
// arguments). An unknown declared type is a string, as the callee reads it.
func Schema(cp *wire.Capability) json.RawMessage {
	type prop struct {
		Type            string         `json:"type"`
		Description     string         `json:"description,omitempty"`
		Items           map[string]any `json:"items,omitempty"`
		ContentEncoding string         `json:"contentEncoding,omitempty"`
	}
	props := make(map[string]prop, len(cp.Params))
	required := []string{}
	for _, p := range cp.Params {
		if p.Name == userConfirmed {
			continue // the runtime's, never the model's
		}
		pr := prop{Type: "string", Description: p.Description}
		switch p.Type {
		case wire.TypeInt:
			pr.Type = "integer"
		case wire.TypeBoolean:
			pr.Type = "boolean"
		case wire.TypeDouble:
			pr.Type = "number"
		case wire.TypeBytes:
			pr.ContentEncoding = "base64"
		case wire.TypeStringArray:
			pr.Type, pr.Items = "array", map[string]any{"type": "string"}
		}
		props[p.Name] = pr
		if p.Required {
			required = append(required, p.Name)
		}
	}
	s := struct {
		Type                 string          `json:"type"`
		Properties           map[string]prop `json:"properties"`
		Required             []string        `json:"required,omitempty"`
		AdditionalProperties bool            `json:"additionalProperties"`
	}{"object", props, required, false}
	raw, _ := json.Marshal(s)
	return raw
}
