package steps

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// acpClientDir installs node_modules once, with npm ci, and reports a
// failed install with npm's output.
func TestACPClientDirInstallsOnce(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	fakeNPM := "#!/bin/sh\necho \"$@\" >> " + calls + "\n" +
		"[ -n \"$FAKE_NPM_FAIL\" ] && { echo registry unreachable; exit 1; }\n" +
		"mkdir -p node_modules/@agentclientprotocol/sdk && echo '{}' > node_modules/@agentclientprotocol/sdk/package.json\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "npm"), []byte(fakeNPM), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("FAKE_NPM_FAIL", "1")
	_, err := acpClientDir(t.Context())
	require.ErrorContains(t, err, "registry unreachable")

	t.Setenv("FAKE_NPM_FAIL", "")
	dir, err := acpClientDir(t.Context())
	require.NoError(t, err)
	again, err := acpClientDir(t.Context())
	require.NoError(t, err)
	assert.Equal(t, dir, again)
	assert.FileExists(t, filepath.Join(dir, "client.mjs"))
	b, err := os.ReadFile(calls)
	require.NoError(t, err)
	assert.Equal(t, "ci --no-audit --no-fund\nci --no-audit --no-fund\n", string(b), "one failed install, one that stays")
	left, err := filepath.Glob(filepath.Join(filepath.Dir(dir), "*.part-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no half-installed folder left")
}
