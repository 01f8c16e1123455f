package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// In the fault-injection build, oversize_closes_channel sends a long
// tool call's arguments whole instead of the truncation marker (so the
// update is over the line limit), and only while it is selected.
func TestFaultOversizeArguments(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build")
	}
	args, _ := json.Marshal(map[string]string{"text": strings.Repeat("a", MaxRawInputChars+1)})
	truncated := func() bool {
		m, ok := displayInput(args).(map[string]any)
		_, marked := m[RawInputTruncated]
		return ok && marked
	}
	t.Setenv(faultinject.Env, "")
	assert.True(t, truncated(), "long arguments are marked without the fault")
	t.Setenv(faultinject.Env, faultinject.OversizeClosesChannel)
	assert.False(t, truncated(), "with the fault the arguments go out whole")
}
