package consent

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// In the fault-injection build, each consent fault breaks exactly its
// rule, and only while it is selected (the lab's kill matrix relies on
// the mutation being the one named).
func TestFaults(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build (go test -tags with faultinject's tag)")
	}
	high := Offer{Risk: catalog.RiskHigh, Rememberable: true, Source: &catalog.ToolID{Plugin: "p", Server: "s", Tool: "t"},
		WritebackAvailable: true, AlwaysAllowOffered: true}
	for _, tc := range []struct {
		fault  string
		broken func() bool
	}{
		{faultinject.HighOffersAlwaysAllow, func() bool { return slices.Contains(Options(high), AlwaysAllow) }},
		{faultinject.UnofferedAnswerAllows, func() bool { return Resolve([]Choice{AllowOnce, Deny}, AlwaysAllow) != Deny }},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Setenv(faultinject.Env, "")
			require.False(t, tc.broken(), "the rule is broken without the fault")
			t.Setenv(faultinject.Env, tc.fault)
			require.True(t, tc.broken(), "the fault does not break the rule")
		})
	}
}
