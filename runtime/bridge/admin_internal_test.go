package bridge

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrintCodeNamesTheRealCommand: the text of desktop enable / desktop
// code tells the owner the command that exists on the computer (it used
// to say "acp-bridge pair", which nobody has).
func TestPrintCodeNamesTheRealCommand(t *testing.T) {
	raw, err := json.Marshal(CodeResult{Code: "416053", ExpiresInMs: CodeTTL.Milliseconds()})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, printCode(&out, raw))
	assert.Equal(t, "pairing code: 416053 (valid 5m0s, one use)\n"+
		"on the computer: agentlab bridge pair 416053 (add -s SERIAL when adb lists several devices)\n", out.String())
	assert.NotContains(t, out.String(), "acp-bridge")
}
