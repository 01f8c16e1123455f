package sampletest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// PluginAssets is what an app's plugin assets must say about it.
type PluginAssets struct {
	// Plugin, Server and Service are the app's identity constants
	// (spec §9.0: plugin name = MCP server name = app name).
	Plugin, Server, Service string
	// Version is plugin.json's version.
	Version string
	// DisplayName is the interface name of com.openai's extension.
	DisplayName string
	// Skill is the skill's folder under skills/ and its frontmatter name.
	Skill string
	// Tools are the app's tools; the skill's body names each of them.
	Tools []apptool.Tool
}

// CheckPluginAssets checks assets/agent-plugin of the package under test:
// plugin.json has only the keys the plugin schema allows and names the
// plugin, its version, its one MCP server and service (spec §6.2, §9.0), and the
// skill has a frontmatter with a name and a description and mentions
// every tool (§6.5).
func CheckPluginAssets(t testing.TB, want PluginAssets) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("assets", "agent-plugin", "plugin.json"))
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
	if p.Schema != "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json" || p.Name != want.Plugin || p.Version != want.Version ||
		p.Extensions.OpenAI.Interface.DisplayName != want.DisplayName || len(p.Extensions.AgentOS.MCPServers) != 1 ||
		p.Extensions.AgentOS.MCPServers[want.Server].Service != want.Service {
		t.Fatalf("plugin.json = %+v", p)
	}
	skill, err := os.ReadFile(filepath.Join("assets", "agent-plugin", "skills", want.Skill, "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(skill)
	front, body, ok := strings.Cut(strings.TrimPrefix(s, "---\n"), "\n---\n")
	if !strings.HasPrefix(s, "---\n") || !ok || !strings.Contains(front, "name: "+want.Skill+"\n") || !strings.Contains(front, "description: ") {
		t.Fatalf("SKILL.md frontmatter: %q", front)
	}
	for _, tl := range want.Tools {
		if !strings.Contains(body, "`"+tl.Name+"`") {
			t.Errorf("SKILL.md does not mention %s", tl.Name)
		}
	}
}
