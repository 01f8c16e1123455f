package steps

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The client's dependency is pinned: package.json names one exact
// version and package-lock.json installs that one, so npm ci installs
// the SDK the suite was written against.
func TestACPClientPinned(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := acpClientFiles.ReadFile("acpclient/package.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &pkg))
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	b, err = acpClientFiles.ReadFile("acpclient/package-lock.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &lock))
	want := pkg.Dependencies["@agentclientprotocol/sdk"]
	require.Regexp(t, `^\d+\.\d+\.\d+$`, want, "an exact version")
	got := lock.Packages["node_modules/@agentclientprotocol/sdk"]
	assert.Equal(t, want, got.Version)
	assert.NotEmpty(t, got.Integrity)
	_, err = acpClientFiles.ReadFile("acpclient/client.mjs")
	require.NoError(t, err)
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abcdef", 3, "def"},
		{"ab", 3, "ab"},
		{"", 3, ""},
	} {
		assert.Equal(t, tc.want, tail([]byte(tc.in), tc.n))
	}
}
