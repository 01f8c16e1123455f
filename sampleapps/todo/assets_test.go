package todo

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The plugin assets name this app's plugin, server and service (spec §6.2,
// §9.0) and carry a skill with a frontmatter name and description (§6.5).
func TestPluginAssets(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("assets/agent-plugin/plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"$schema": true, "name": true, "version": true, "description": true, "author": true,
		"homepage": true, "repository": true, "license": true, "keywords": true, "extensions": true}
	for k := range m {
		if !allowed[k] {
			t.Errorf("key %q not allowed in plugin.json", k)
		}
	}
	var p struct {
		Schema     string `json:"$schema"`
		Name       string `json:"name"`
		Version    string `json:"version"`
		Extensions struct {
			OpenAI struct {
				Interface struct {
					DisplayName string `json:"displayName"`
				} `json:"interface"`
			} `json:"com.openai"`
			AgentOS struct {
				MCPServers map[string]struct {
					Service string `json:"service"`
				} `json:"mcpServers"`
			} `json:"org.agentos"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Schema != "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json" || p.Name != Plugin || p.Version != "1.0.0" ||
		p.Extensions.OpenAI.Interface.DisplayName != "待办" || len(p.Extensions.AgentOS.MCPServers) != 1 ||
		p.Extensions.AgentOS.MCPServers[Server].Service != Service {
		t.Fatalf("plugin.json = %+v", p)
	}
	skill, err := os.ReadFile("assets/agent-plugin/skills/todo/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(skill)
	front, body, ok := strings.Cut(strings.TrimPrefix(s, "---\n"), "\n---\n")
	if !strings.HasPrefix(s, "---\n") || !ok || !strings.Contains(front, "name: todo\n") || !strings.Contains(front, "description: ") {
		t.Fatalf("SKILL.md frontmatter: %q", front)
	}
	for _, tl := range newFixture(t, "UTC", "2026-10-12T06:00").App.Tools() {
		if !strings.Contains(body, "`"+tl.Name+"`") {
			t.Errorf("SKILL.md does not mention %s", tl.Name)
		}
	}
}
