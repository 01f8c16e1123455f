package catalog_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
)

// TestScopeConversions: engine's entry type and ours convert both ways,
// keeping nil (no scope) apart from empty (no tools).
func TestScopeConversions(t *testing.T) {
	t.Parallel()
	in := []engine.ToolScopeEntry{{Plugin: "alarm", Tool: "alarm_create"}}
	got := catalog.ScopeOf(in)
	if len(got) != 1 || got[0] != (catalog.ScopeEntry{Plugin: "alarm", Tool: "alarm_create"}) {
		t.Fatalf("ScopeOf = %v", got)
	}
	back := catalog.ScopeAs[engine.ToolScopeEntry](got)
	if len(back) != 1 || back[0] != in[0] {
		t.Fatalf("ScopeAs = %v", back)
	}
	if catalog.ScopeOf([]engine.ToolScopeEntry(nil)) != nil || catalog.ScopeAs[engine.ToolScopeEntry](nil) != nil {
		t.Error("nil must stay nil")
	}
	if e := catalog.ScopeOf([]engine.ToolScopeEntry{}); e == nil || len(e) != 0 {
		t.Error("empty must stay empty")
	}
}

// TestCatalogStaysLight: anything may import the catalog, so it must not
// pull in SQLite, the MCP or ACP SDKs, model clients or the engine.
func TestCatalogStaysLight(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{
			"modernc.org/", "github.com/modelcontextprotocol/", "github.com/coder/acp-go-sdk",
			"github.com/openai/", "github.com/anthropics/",
			"github.com/agentoslab/agentlab/runtime/engine", "github.com/agentoslab/agentlab/runtime/store",
		} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("runtime/catalog depends on %s", dep)
			}
		}
	}
}
