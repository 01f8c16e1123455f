package skills

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// In the fault-injection build, read_skill_dotdot lets ".." through
// CheckPath, and only while it is selected.
func TestFaultDotDot(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build")
	}
	t.Setenv(faultinject.Env, "")
	require.Error(t, CheckPath("../broken/SKILL.md"), `".." passes without the fault`)
	t.Setenv(faultinject.Env, faultinject.ReadSkillDotDot)
	require.NoError(t, CheckPath("../broken/SKILL.md"), `with the fault ".." is still refused`)
	require.Error(t, CheckPath("./SKILL.md"), `the fault lets "." through too; it must break ".." only`)
}
