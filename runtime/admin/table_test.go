package admin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/admin"
	// The packages that register admin methods and ctl verbs. A duplicate
	// name anywhere panics when this test binary starts.
	_ "github.com/agentoslab/agentlab/runtime/bridge"
	_ "github.com/agentoslab/agentlab/runtime/callerchan"
	_ "github.com/agentoslab/agentlab/runtime/ext/broker"
	_ "github.com/agentoslab/agentlab/runtime/modelconf"
)

// TestWholeTable checks the method table as agentosd assembles it: every
// method valid and listed once in order, every ctl verb calling a method
// that exists, and the owner-only rules that matter most.
func TestWholeTable(t *testing.T) {
	ms := admin.Methods()
	if !slices.IsSortedFunc(ms, func(a, b admin.Method) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("method table not sorted")
	}
	byName := map[string]admin.Method{}
	for _, m := range ms {
		if _, dup := byName[m.Name]; dup {
			t.Errorf("method %s twice", m.Name)
		}
		byName[m.Name] = m
		if m.Perm == 0 || m.Perm&^admin.Owner != 0 || m.Handle == nil {
			t.Errorf("method %s: perm %v, handler %v", m.Name, m.Perm, m.Handle != nil)
		}
	}
	for _, v := range admin.Verbs() {
		if v.Group == "test" { // ctl_test.go's verbs over its own test table
			continue
		}
		if _, ok := byName[v.Method]; !ok {
			t.Errorf("ctl %s %s calls unknown method %s", v.Group, v.Name, v.Method)
		}
	}
	for name, perm := range map[string]admin.Perm{"app.install": admin.Root, "app.uninstall": admin.Root} {
		if byName[name].Perm != perm {
			t.Errorf("%s is %v, want %v", name, byName[name].Perm, perm)
		}
	}
	t.Logf("%d methods, %d verbs", len(ms), len(admin.Verbs()))
}
