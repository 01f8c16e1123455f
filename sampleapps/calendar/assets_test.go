package calendar

import (
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// The plugin assets name this app's plugin, server and service (spec §6.2,
// §9.0) and carry a skill with a frontmatter name and description (§6.5).
func TestPluginAssets(t *testing.T) {
	t.Parallel()
	sampletest.CheckPluginAssets(t, sampletest.PluginAssets{
		Plugin: Plugin, Server: Server, Service: Service, Version: "1.1.0", DisplayName: "日历", Skill: "calendar",
		Tools: newFixture(t, "UTC", "2026-10-12T06:00").App.Tools(),
	})
}
