package skills

import (
	"testing"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// In the fault-injection build, read_skill_dotdot lets ".." through
// CheckPath, and only while it is selected.
func TestFaultDotDot(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build")
	}
	t.Setenv(faultinject.Env, "")
	if CheckPath("../broken/SKILL.md") == nil {
		t.Fatal(`".." passes without the fault`)
	}
	t.Setenv(faultinject.Env, faultinject.ReadSkillDotDot)
	if err := CheckPath("../broken/SKILL.md"); err != nil {
		t.Fatalf(`with the fault ".." is still refused: %v`, err)
	}
	if CheckPath("./SKILL.md") == nil {
		t.Fatal(`the fault lets "." through too; it must break ".." only`)
	}
}
