package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool_call always fits in a line the client can read: long arguments
// become the RawInputTruncated marker (spec §4.2), measured as they will
// be encoded, not as they were stored.
func TestDisplayInput(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", 100000) + `"}`
	// 3,000 '<' are 3,000 chars stored but 18,000 once encoding/json
	// escapes them.
	escaped := `{"text":"` + strings.Repeat("<", 3000) + `"}`
	tests := []struct {
		name      string
		args      string
		truncated bool
	}{
		{"small", `{"text":"hi"}`, false},
		{"at the limit", `{"t":"` + strings.Repeat("y", MaxRawInputChars-8) + `"}`, false},
		{"over the limit", `{"t":"` + strings.Repeat("y", MaxRawInputChars-7) + `"}`, true},
		{"100,000 chars", long, true},
		{"escapes grow", escaped, true},
		{"not JSON", `{`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := displayInput(json.RawMessage(tc.args))
			enc, err := json.Marshal(got)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(enc), MaxRawInputChars+rawInputPreviewChars*6+200, "what is sent stays bounded")
			m, _ := got.(map[string]any)
			marker, isMarker := m[RawInputTruncated].(map[string]any)
			require.Equal(t, tc.truncated, isMarker, "marker present")
			if tc.truncated {
				assert.Equal(t, MaxRawInputChars, marker["limit"])
				assert.Greater(t, marker["originalChars"], MaxRawInputChars)
				assert.True(t, strings.HasPrefix(tc.args, m["preview"].(string)), "preview is the start of the arguments")
				assert.Len(t, m["preview"], rawInputPreviewChars)
			}
		})
	}
}
