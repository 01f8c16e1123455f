package appbundle

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/agentoslab/agentlab/sampleapps/notes"
	"github.com/agentoslab/agentlab/sampleapps/sms"
	"github.com/agentoslab/agentlab/sampleapps/todo"
)

// identity is what each app's package says about itself.
var identity = map[string]struct {
	pkg, server, service string
	caller               bool
	commands             []string
}{
	"alarm":    {alarm.Package, alarm.Server, alarm.Service, false, alarm.DebugCommands},
	"calendar": {calendar.Package, calendar.Server, calendar.Service, false, calendar.DebugCommands},
	"notes":    {notes.Package, notes.Server, notes.Service, true, notes.DebugCommands},
	"todo":     {todo.Package, todo.Server, todo.Service, false, todo.DebugCommands},
	"sms":      {sms.Package, sms.Server, sms.Service, true, sms.DebugCommands},
	"mcptest":  {mcptest.Package, mcptest.Server, mcptest.Service, false, mcptest.DebugCommands},
}

// Each app.json (the one place the lab's build reads an app's identity)
// agrees with the app's package and its plugin.json: package, one MCP
// service whose name plugin.json's mcpServers.<server>.service gives, the
// caller flag on the two caller apps, exactly the app's debug commands,
// and the plugin's display name as the label.
func TestAppJSON(t *testing.T) {
	t.Parallel()
	for _, app := range Apps {
		t.Run(app, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", app, apps.AppJSONName))
			if err != nil {
				t.Fatal(err)
			}
			a, err := apps.ParseApp(raw)
			if err != nil {
				t.Fatal(err)
			}
			want := identity[app]
			if a.Package != want.pkg || a.Binary != app || a.Caller != want.caller || a.VersionCode < 1 {
				t.Errorf("app.json %+v", a)
			}
			if len(a.Services) != 1 || a.Services[0].Server != want.server || a.Services[0].Name != want.service {
				t.Errorf("services %+v, want server %s service %s", a.Services, want.server, want.service)
			}
			if !slices.Equal(a.Commands, want.commands) {
				t.Errorf("commands %v, want the app's debug commands %v", a.Commands, want.commands)
			}
			// Only the test plugin asks for the network (the inet group):
			// the sample apps never open a socket.
			if a.UsesNetwork() != (app == "mcptest") {
				t.Errorf("permissions %v", a.Permissions)
			}
			var p struct {
				Name       string `json:"name"`
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
			pj, err := os.ReadFile(filepath.Join("..", "..", app, "assets", "agent-plugin", "plugin.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(pj, &p); err != nil {
				t.Fatal(err)
			}
			if p.Extensions.AgentOS.MCPServers[want.server].Service != want.service || a.Label != p.Extensions.OpenAI.Interface.DisplayName {
				t.Errorf("plugin.json %+v does not match app.json %+v", p, a)
			}
		})
	}
}

// Sample apps pack into bundles that verify, with app.json, the binary
// for this machine and the plugin assets; asking twice gives the cached
// bundle. (sampleapps/e2e installs all six with the real installer.)
func TestBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every sample app; skipped with -short")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.All(ctx, "todo", "mcptest")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("%d bundles", len(all))
	}
	for _, b := range all {
		data, err := os.ReadFile(b.Path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := apps.VerifyBytes(data)
		if err != nil {
			t.Fatalf("%s: %v", b.App, err)
		}
		if m.ContentDigest != b.Manifest.ContentDigest || m.SigningDigest != apps.SigningDigest(s.Key().Public().(ed25519.PublicKey)) {
			t.Errorf("%s: manifest %+v", b.App, m)
		}
		names := map[string]bool{}
		for _, f := range m.Files {
			names[f.Name] = true
		}
		if !names[apps.BinaryPath(apps.HostABI(), b.App)] || !names["assets/agent-plugin/plugin.json"] || !names[apps.AppJSONName] {
			t.Errorf("%s: files %v", b.App, m.Files)
		}
		if again, err := s.Bundle(ctx, b.App); err != nil || again != b {
			t.Errorf("%s: second Bundle %v %v", b.App, again, err)
		}
	}
	if _, err := s.Bundle(ctx, "clock"); !errors.Is(err, ErrUnknownApp) {
		t.Errorf("unknown app: %v", err)
	}
}
