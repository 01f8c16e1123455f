package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSavedName(t *testing.T) {
	for path, want := range map[string]string{
		"scenarios/notes/revoke-live.yaml":     "notes/revoke-live",
		"x/scenarios/notes/deep/a.yaml":        "notes/deep/a",
		"suite/notes/a.yaml":                   "notes/a",
		"./scenarios/../scenarios/sms/b.yaml":  "sms/b",
		"/abs/path/scenarios/fault/cut-1.yaml": "fault/cut-1",
	} {
		got, err := savedName(path)
		require.NoError(t, err, path)
		assert.Equal(t, want, got, path)
	}
	for _, bad := range []string{"a.yaml", "scenarios/notes/a.json"} {
		_, err := savedName(bad)
		assert.Error(t, err, bad)
	}
}

// TestReplaySave: --save writes a scenario that validates under the name
// its path gives; a folder that is not a recording is a usage error.
func TestReplaySave(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "scenarios", "rec", "echo.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte("name: rec/echo\nneeds: {model: any}\nsteps:\n  - prompt: {text: hi}\n    save: chat\n"), 0o644))
	dir := filepath.Join(root, "attempt-1")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "recording.yaml"),
		[]byte("scenario: rec/echo\nfile: "+file+"\nattempt: 1\nverdict: pass\nscripts: {\"\": model-script.yaml}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model-script.yaml"), []byte("steps:\n  - text: [hel, lo]\n"), 0o644))

	saved := filepath.Join(root, "scenarios", "rec", "echo-saved.yaml")
	r := runCLI(t, "replay", "--save", saved, dir)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "scenario rec/echo-saved")
	s, err := scenario.Load(saved)
	require.NoError(t, err)
	assert.Equal(t, "rec/echo-saved", s.Name)
	require.NotNil(t, s.Model.Parsed)
	assert.Equal(t, scenario.ModelStub, s.NeedsModel())

	assert.Equal(t, ExitUsage, runCLI(t, "replay", "--save", saved, root).code, "not a recorded attempt")
	assert.Equal(t, ExitUsage, runCLI(t, "replay").code)
	assert.Equal(t, ExitUsage, runCLI(t, "replay", "--repeat", "0", dir).code)
}
