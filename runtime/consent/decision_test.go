package consent

import (
	"slices"
	"testing"

	"github.com/agentoslab/agentlab/runtime/catalog"
)

func TestRequirement(t *testing.T) {
	t.Parallel()
	const (
		read  = catalog.RiskRead
		write = catalog.RiskWrite
		high  = catalog.RiskHigh
		ask   = catalog.ApprovalAsk
		al    = catalog.ApprovalAlways
	)
	tests := []struct {
		name       string
		risk       catalog.Risk
		hook       HookDecision
		approval   catalog.Approval
		remembered bool
		want       Need
	}{
		{"READ runs without consent", read, HookNone, "", false, NotNeeded},
		{"READ + hook allow", read, HookAllow, "", false, NotNeeded},
		{"hook ask beats READ", read, HookAsk, al, true, Ask},
		{"hook ask beats always", write, HookAsk, al, true, Ask},
		{"unknown hook decision asks", read, "deny", "", false, Ask},
		{"HIGH asks", high, HookNone, "", false, Ask},
		{"HIGH ignores always", high, HookNone, al, false, Ask},
		{"HIGH ignores session memory", high, HookAllow, al, true, Ask},
		{"WRITE always = policy", write, HookNone, al, false, RunByPolicy},
		{"WRITE always wins over memory", write, HookAllow, al, true, RunByPolicy},
		{"WRITE remembered", write, HookNone, ask, true, RunRemembered},
		{"WRITE asks", write, HookNone, ask, false, Ask},
		{"WRITE no setting asks", write, HookAllow, "", false, Ask},
		{"invalid risk fails closed", 0, HookNone, al, true, Ask},
	}
	for _, tt := range tests {
		if got := Requirement(tt.risk, tt.hook, tt.approval, tt.remembered); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if RunByPolicy.String() != "policy" || RunRemembered.String() != "remembered" {
		t.Error("event reasons")
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	src := &catalog.ToolID{Plugin: "notes", Server: "notes", Tool: "note_create"}
	all := Offer{Risk: catalog.RiskWrite, Rememberable: true, Source: src, WritebackAvailable: true, AlwaysAllowOffered: true}
	with := func(f func(*Offer)) Offer { o := all; f(&o); return o }
	tests := []struct {
		name string
		o    Offer
		want []Choice
	}{
		{"WRITE with everything", all, []Choice{AllowOnce, AllowForSession, AlwaysAllow, Deny}},
		{"HIGH: once or deny", with(func(o *Offer) { o.Risk = catalog.RiskHigh }), []Choice{AllowOnce, Deny}},
		{"READ (hook asked): once or deny", with(func(o *Offer) { o.Risk = catalog.RiskRead }), []Choice{AllowOnce, Deny}},
		{"not rememberable", with(func(o *Offer) { o.Rememberable = false }), []Choice{AllowOnce, AlwaysAllow, Deny}},
		{"session tool: no source", with(func(o *Offer) { o.Source = nil }), []Choice{AllowOnce, AllowForSession, Deny}},
		{"write-back unavailable", with(func(o *Offer) { o.WritebackAvailable = false }), []Choice{AllowOnce, AllowForSession, Deny}},
		{"always not offered", with(func(o *Offer) { o.AlwaysAllowOffered = false }), []Choice{AllowOnce, AllowForSession, Deny}},
		{"strict caller policy", Offer{Risk: catalog.RiskWrite, Source: src, WritebackAvailable: true}, []Choice{AllowOnce, Deny}},
	}
	for _, tt := range tests {
		if got := Options(tt.o); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	opts := []Choice{AllowOnce, Deny}
	tests := []struct {
		answer, want Choice
	}{
		{AllowOnce, AllowOnce},
		{Deny, Deny},
		{AlwaysAllow, Deny}, // not offered → deny
		{AllowForSession, Deny},
		{"", Deny},
		{"allow_once", Deny},
	}
	for _, tt := range tests {
		if got := Resolve(opts, tt.answer); got != tt.want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.answer, got, tt.want)
		}
	}
}
