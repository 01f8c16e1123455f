package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScenariosNew: scenarios new writes a skeleton that validates, with
// the suite's test-caller fragment or without it, and never overwrites.
func TestScenariosNew(t *testing.T) {
	frag, err := os.ReadFile("../../scenarios/test-caller.fragment.yaml")
	require.NoError(t, err)
	for _, withFragment := range []bool{true, false} {
		dir := t.TempDir()
		if withFragment {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "test-caller.fragment.yaml"), frag, 0o644))
		}
		r := runCLI(t, "scenarios", "new", "--dir", dir, "notes/create-then-get")
		require.Equal(t, ExitOK, r.code, r.stderr)
		file := filepath.Join(dir, "notes", "create-then-get.yaml")
		assert.Contains(t, r.stdout, "wrote "+file)
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, withFragment, strings.Contains(string(b), "include: {fragment: test-caller"))

		r = runCLI(t, "scenarios", "validate", dir)
		assert.Equal(t, ExitOK, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "1 scenario valid")

		r = runCLI(t, "scenarios", "new", "--dir", dir, "notes/create-then-get")
		assert.Equal(t, ExitUsage, r.code, "an existing scenario is never overwritten")
	}
	r := runCLI(t, "scenarios", "new", "--dir", t.TempDir(), "no-area")
	assert.Equal(t, ExitUsage, r.code)
}

// TestScenariosValidateTypos: a typo in a caller plan (an unknown
// operation, an unknown or misplaced field) or in a model script step is
// reported by scenarios validate at file:line:col, with exit 2.
func TestScenariosValidateTypos(t *testing.T) {
	bad := "../scenario/testdata/bad/"
	r := runCLI(t, "scenarios", "validate", bad+"plan-unknown-op.yaml", bad+"plan-unknown-field.yaml",
		bad+"plan-wrong-op-field.yaml", bad+"plan-script-step.yaml")
	assert.Equal(t, ExitUsage, r.code)
	for _, want := range []string{
		bad + `plan-unknown-op.yaml:7:11: steps[0].caller.plan[0]: unknown operation "conect" (did you mean "connect"?)`,
		bad + `plan-unknown-field.yaml:8:24: steps[0].caller.plan[1].new.scoop: unknown key (did you mean "scope"?)`,
		bad + `plan-wrong-op-field.yaml:7:21: steps[0].caller.plan[0].connect.session: connect takes no session`,
		bad + `plan-script-step.yaml:8:9: scripts.hang.steps[0].hangAftr: unknown key (did you mean "hangAfter"?)`,
	} {
		assert.Contains(t, r.stdout, want)
	}
}
