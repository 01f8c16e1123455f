package scenario

import (
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/agentoslab/agentlab/sampleapps/notes"
	"github.com/agentoslab/agentlab/sampleapps/sms"
	"github.com/agentoslab/agentlab/sampleapps/todo"
)

// TestAppsMatchSampleApps keeps the table of short names in step with
// the sample apps' packages.
func TestAppsMatchSampleApps(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		acptestclient.Binary: acptestclient.Package,
		alarm.Plugin:         alarm.Package, calendar.Plugin: calendar.Package, mcptest.Plugin: mcptest.Package,
		notes.Plugin: notes.Package, sms.Plugin: sms.Package, todo.Plugin: todo.Package,
		"browser": "org.agentos.sample.browser", // its app.json (sampleapps/browser)
		"acitest": "org.agentos.test.aci",       // its app.json (sampleapps/acitest)
	}
	if len(want) != len(Apps) {
		t.Errorf("Apps has %d entries, the sample apps %d", len(Apps), len(want))
	}
	for name, pkg := range want {
		if Apps[name] != pkg {
			t.Errorf("Apps[%q] = %q, want %q", name, Apps[name], pkg)
		}
		if got, ok := PackageOf(name); !ok || got != pkg {
			t.Errorf("PackageOf(%q) = %q, %v", name, got, ok)
		}
		if AppName(pkg) != name {
			t.Errorf("AppName(%q) = %q", pkg, AppName(pkg))
		}
	}
}
