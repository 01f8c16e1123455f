package sdui

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The schema the upstream code emits (the guide's key/text/hint variant
// is wrong): buttons carry action+label, inputs placeholder, updatedAt
// is epoch ms; an ISO updatedAt reads as 0 as upstream's optLong.
func TestParseUpstreamSnapshot(t *testing.T) {
	s, warn, err := Parse([]byte(`{"title":"","updatedAt":"2026-08-01T00:00:00Z","components":[
		{"type":"heading","text":"Browser"},{"type":"button","action":"read"},
		{"type":"input","key":"url","placeholder":"https://","action":"open"},
		{"type":"carousel","text":"?"},{"type":"spacer","height":40}]}`))
	require.NoError(t, err)
	assert.Empty(t, warn)
	assert.Equal(t, DefaultTitle, s.Title)
	assert.Equal(t, int64(0), s.UpdatedAt)
	assert.Equal(t, DefaultButtonLabel, s.Components[1].Label)
	assert.Equal(t, DefaultInputLabel, s.Components[2].Label)
	text := RenderText(s)
	assert.Contains(t, text, "(按钮) → action read")
	assert.Contains(t, text, "[未知组件: carousel]", "unknown types are shown as such")

	_, warn, err = Parse([]byte(`{"title":"x","schema_version":"aci-sdui-v2","components":[]}`))
	require.NoError(t, err)
	assert.Contains(t, warn, "aci-sdui-v2")
}

// Upstream's two consoles spelt an input's payload differently; a backend
// reading one spelling got empty input from the other controller.
func TestValueAcceptsBothSpellings(t *testing.T) {
	for name, payload := range map[string]string{
		"Compose console": `{"value":"https://a","key":"url"}`,
		"View console":    `{"url":"https://a"}`,
	} {
		v, ok := Value(payload, "url")
		assert.True(t, ok, name)
		assert.Equal(t, "https://a", v, name)
	}
	b, _ := json.Marshal(InputPayload("url", "https://b"))
	v, ok := Value(string(b), "url")
	assert.True(t, ok)
	assert.Equal(t, "https://b", v)
	_, ok = Value("{}", "url")
	assert.False(t, ok, "a button's payload has no value")
	_, ok = Value("", "url")
	assert.False(t, ok)
}
