package catalog

import (
	"testing"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// In the fault-injection build, session_mcp_loopback admits loopback
// URLs, and only while it is selected; other private addresses stay out.
func TestFaultLoopback(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build")
	}
	t.Setenv(faultinject.Env, "")
	if CheckServerURL("https://127.0.0.1/mcp") == nil {
		t.Fatal("loopback admitted without the fault")
	}
	t.Setenv(faultinject.Env, faultinject.SessionMCPLoopback)
	if err := CheckServerURL("https://127.0.0.1/mcp"); err != nil {
		t.Fatalf("with the fault loopback is still refused: %v", err)
	}
	if CheckServerURL("https://10.0.0.1/mcp") == nil {
		t.Fatal("the fault admits private addresses too; it must break loopback only")
	}
}
