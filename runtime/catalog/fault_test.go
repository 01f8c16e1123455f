package catalog

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// In the fault-injection build, session_mcp_loopback admits loopback
// URLs, and only while it is selected; other private addresses stay out.
func TestFaultLoopback(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build")
	}
	t.Setenv(faultinject.Env, "")
	require.Error(t, CheckServerURL("https://127.0.0.1/mcp"), "loopback admitted without the fault")
	t.Setenv(faultinject.Env, faultinject.SessionMCPLoopback)
	require.NoError(t, CheckServerURL("https://127.0.0.1/mcp"), "with the fault loopback is still refused")
	require.Error(t, CheckServerURL("https://10.0.0.1/mcp"), "the fault admits private addresses too; it must break loopback only")
}
