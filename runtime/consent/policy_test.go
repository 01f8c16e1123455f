package consent

import (
	"errors"
	"testing"

	"github.com/agentoslab/agentlab/runtime/catalog"
)

// specExample is the policy file of spec §5.3, byte for byte.
const specExample = `{"version":1,"plugins":{"notes":{"enabled":true,"approval":"ask","servers":{"notes":{"approval":"always","tools":{"delete_note":{"enabled":false}}}}}}}`

func TestPolicySpecExampleRoundTrip(t *testing.T) {
	t.Parallel()
	p, err := ParsePolicy([]byte(specExample))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Marshal()); got != specExample {
		t.Errorf("Marshal:\n got %s\nwant %s", got, specExample)
	}
}

func id(p, s, t string) catalog.ToolID { return catalog.ToolID{Plugin: p, Server: s, Tool: t} }

func TestPolicyResolve(t *testing.T) {
	t.Parallel()
	p, err := ParsePolicy([]byte(`{"version":1,"plugins":{
		"notes":{"enabled":true,"approval":"ask","servers":{"notes":{"approval":"always","tools":{
			"delete_note":{"enabled":false},
			"note_create":{"approval":"ask"},
			"weird":{"approval":"sometimes"}}}}},
		"alarm":{"approval":"always"},
		"off":{"enabled":false,"approval":"always"},
		"srvoff":{"servers":{"s":{"enabled":false}}},
		"bad":{"enabled":"yes"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	const ask, always = catalog.ApprovalAsk, catalog.ApprovalAlways
	tests := []struct {
		name    string
		id      catalog.ToolID
		enabled bool
		appr    catalog.Approval
	}{
		{"server always applies to tools without a setting", id("notes", "notes", "note_list"), true, always},
		{"tool ask beats server always", id("notes", "notes", "note_create"), true, ask},
		{"tool disabled, approval still from server", id("notes", "notes", "delete_note"), false, always},
		{"unknown approval value is ask, and stops inheritance", id("notes", "notes", "weird"), true, ask},
		{"other server falls back to plugin", id("notes", "other", "x"), true, ask},
		{"plugin always", id("alarm", "alarm", "alarm_create"), true, always},
		{"plugin disabled disables all", id("off", "s", "t"), false, always},
		{"server disabled", id("srvoff", "s", "t"), false, ask},
		{"sibling server enabled", id("srvoff", "s2", "t"), true, ask},
		{"non-boolean enabled is false", id("bad", "s", "t"), false, ask},
		{"unlisted plugin: enabled, ask", id("calendar", "calendar", "event_create"), true, ask},
	}
	for _, tt := range tests {
		r := p.Resolve(tt.id)
		if r.Enabled != tt.enabled || r.Approval != tt.appr {
			t.Errorf("%s: %+v, want enabled=%v approval=%s", tt.name, r, tt.enabled, tt.appr)
		}
	}
	if !p.PluginEnabled("calendar") || p.PluginEnabled("off") || !p.PluginEnabled("srvoff") || p.PluginEnabled("bad") {
		t.Error("PluginEnabled")
	}
	fc := FailClosedPolicy()
	if fc.Resolve(id("calendar", "c", "t")).Enabled || fc.PluginEnabled("calendar") {
		t.Error("fail-closed policy enables unlisted plugins")
	}
	if err := fc.SetEnabled(Target{Plugin: "calendar"}, true); err != nil || !fc.Resolve(id("calendar", "c", "t")).Enabled {
		t.Error("an explicit enable must win over fail-closed")
	}
}

func TestParsePolicyErrors(t *testing.T) {
	t.Parallel()
	bad := []string{
		``, `null`, `[]`, `"x"`, `{`, `{"plugins":{}}`,
		`{"version":0}`, `{"version":-1}`, `{"version":1.5}`, `{"version":"1"}`, `{"version":1e0}`,
		`{"version":null}`, `{"version":true}`, `{"version":99999999999}`,
		`{"version":1,"plugins":[]}`, `{"version":1,"plugins":{"p":[]}}`, `{"version":1,"plugins":{"p":null}}`,
		`{"version":1,"plugins":{"p":{"servers":"x"}}}`, `{"version":1,"plugins":{"p":{"servers":{"s":1}}}}`,
		`{"version":1,"plugins":{"p":{"servers":{"s":{"tools":{"t":"always"}}}}}}`,
		`{"version":1} trailing`,
	}
	for _, s := range bad {
		if _, err := ParsePolicy([]byte(s)); !errors.Is(err, ErrPolicyFormat) {
			t.Errorf("ParsePolicy(%q) = %v, want a format error", s, err)
		}
	}
	good := []string{
		`{"version":1}`, `{"version":2,"plugins":{},"future":true}`, ` {"version": 1 , "plugins": {"p": {}}} `,
		`{"version":1,"plugins":{"p":{"enabled":null,"approval":7,"extra":[1]}}}`,
	}
	for _, s := range good {
		if _, err := ParsePolicy([]byte(s)); err != nil {
			t.Errorf("ParsePolicy(%q) = %v", s, err)
		}
	}
}

func TestPolicySetters(t *testing.T) {
	t.Parallel()
	p := NewPolicy()
	if err := p.SetAlways(id("notes", "notes", "note_create"), catalog.RiskWrite); err != nil {
		t.Fatal(err)
	}
	if got := string(p.Marshal()); got != `{"version":1,"plugins":{"notes":{"servers":{"notes":{"tools":{"note_create":{"approval":"always"}}}}}}}` {
		t.Errorf("after SetAlways: %s", got)
	}
	tests := []struct {
		name string
		t    Target
		a    catalog.Approval
		risk catalog.Risk
		want error
	}{
		{"HIGH tool always", Target{"notes", "notes", "note_delete"}, catalog.ApprovalAlways, catalog.RiskHigh, ErrHighRisk},
		{"unknown risk tool always", Target{"notes", "notes", "x"}, catalog.ApprovalAlways, 0, ErrHighRisk},
		{"HIGH tool ask is fine", Target{"notes", "notes", "note_delete"}, catalog.ApprovalAsk, catalog.RiskHigh, nil},
		{"plugin-level always is allowed", Target{Plugin: "notes"}, catalog.ApprovalAlways, catalog.RiskHigh, nil},
		{"server-level always is allowed", Target{Plugin: "notes", Server: "notes"}, catalog.ApprovalAlways, 0, nil},
		{"bad mode", Target{Plugin: "notes"}, "sometimes", catalog.RiskWrite, ErrBadMode},
		{"bad mode case", Target{Plugin: "notes"}, "ALWAYS", catalog.RiskWrite, ErrBadMode},
		{"no plugin", Target{Server: "s"}, catalog.ApprovalAsk, catalog.RiskWrite, ErrBadTarget},
		{"tool without server", Target{Plugin: "p", Tool: "t"}, catalog.ApprovalAsk, catalog.RiskWrite, ErrBadTarget},
	}
	for _, tt := range tests {
		if err := p.SetApproval(tt.t, tt.a, tt.risk); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	// HIGH tool under a plugin-level always: the file says always, the
	// runtime still asks (Requirement ignores approval for HIGH).
	r := p.Resolve(id("notes", "other", "wipe"))
	if r.Approval != catalog.ApprovalAlways || Requirement(catalog.RiskHigh, HookNone, r.Approval, false) != Ask {
		t.Errorf("HIGH under plugin always: %+v", r)
	}
	// "" clears a level's approval; empty entries vanish from the file.
	q := NewPolicy()
	if err := q.SetApproval(Target{"a", "b", "c"}, catalog.ApprovalAsk, catalog.RiskWrite); err != nil {
		t.Fatal(err)
	}
	if err := q.SetApproval(Target{"a", "b", "c"}, "", catalog.RiskWrite); err != nil {
		t.Fatal(err)
	}
	if got := string(q.Marshal()); got != `{"version":1,"plugins":{}}` {
		t.Errorf("empty entries must be omitted: %s", got)
	}
	if err := q.SetEnabled(Target{Plugin: "z"}, false); err != nil {
		t.Fatal(err)
	}
	if err := q.SetEnabled(Target{Plugin: "a"}, true); err != nil {
		t.Fatal(err)
	}
	if got := string(q.Marshal()); got != `{"version":1,"plugins":{"a":{"enabled":true},"z":{"enabled":false}}}` {
		t.Errorf("sorted keys: %s", got)
	}
	q.ForgetPlugin("z")
	if q.Resolve(id("z", "s", "t")).Enabled != true {
		t.Error("ForgetPlugin must clear the plugin's settings")
	}
	// Marshal does not change the policy it writes.
	c := q.Clone()
	c.Plugins["a"].Enabled = nil
	if q.Plugins["a"].Enabled == nil {
		t.Error("Clone shares levels")
	}
}

// FuzzParsePolicy: never panics; an accepted file writes out in a form
// that parses back to the same file and the same answers.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		specExample, `{"version":1}`, `{"version":0}`, `{"version":1,"plugins":{"p":{"enabled":"x","approval":7}}}`,
		`{"version":1,"plugins":{"p":{"servers":{"s":{"tools":{"t":{"approval":"always","enabled":false}}}}}}}`,
		`{"version":3,"plugins":{"":{"servers":{"":{"tools":{"":{}}}}}}}`, `[`, `{"version":1,"plugins":{"p":[]}}`,
	} {
		f.Add([]byte(s))
	}
	probes := []catalog.ToolID{id("notes", "notes", "delete_note"), id("p", "s", "t"), id("", "", ""), id("notes", "x", "y")}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			if !errors.Is(err, ErrPolicyFormat) || p != nil {
				t.Fatalf("error %v with policy %v", err, p)
			}
			return
		}
		out := p.Marshal()
		q, err := ParsePolicy(out)
		if err != nil {
			t.Fatalf("own output %s does not parse: %v", out, err)
		}
		if again := q.Marshal(); string(again) != string(out) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
		for _, pr := range probes {
			if p.Resolve(pr) != q.Resolve(pr) {
				t.Fatalf("answer for %v changed after a round trip", pr)
			}
		}
		for name, pp := range p.Plugins {
			for sn, sp := range pp.Servers {
				for tn := range sp.Tools {
					pr := id(name, sn, tn)
					if p.Resolve(pr) != q.Resolve(pr) {
						t.Fatalf("answer for %v changed after a round trip", pr)
					}
				}
			}
		}
	})
}
