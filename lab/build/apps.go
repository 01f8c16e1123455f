package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentoslab/agentlab/runtime/apps"
)

// appFacts is what app.json says about a sample app, apart from the
// version the build stamps. The sample apps keep their identity in their
// packages' constants (a test checks this table against them); an app
// folder with its own app.json overrides its row.
type appFacts struct {
	Package  string
	Label    string
	Server   string
	Service  string
	Caller   bool
	Commands []string
}

var sampleApps = map[string]appFacts{
	"alarm": {Package: "org.agentos.sample.alarm", Label: "闹钟", Server: "alarm", Service: "org.agentos.sample.alarm.AlarmMcpService",
		Commands: []string{"dump", "reset", "seed", "tool", "ring"}},
	"calendar": {Package: "org.agentos.sample.calendar", Label: "日历", Server: "calendar", Service: "org.agentos.sample.calendar.CalendarMcpService",
		Commands: []string{"dump", "reset", "seed", "clear", "tool", "set"}},
	"notes": {Package: "org.agentos.sample.notes", Label: "备忘录", Server: "notes", Service: "org.agentos.sample.notes.NotesMcpService", Caller: true,
		Commands: []string{"dump", "reset", "seed", "tool", "raw_prompt", "ask_agent"}},
	"sms": {Package: "org.agentos.sample.sms", Label: "短信", Server: "sms", Service: "org.agentos.sample.sms.SmsMcpService", Caller: true,
		Commands: []string{"dump", "reset", "seed", "tool", "inbox", "set", "processed", "instructions", "raw_prompt", "ask_agent"}},
	"todo": {Package: "org.agentos.sample.todo", Label: "待办", Server: "todo", Service: "org.agentos.sample.todo.TodoMcpService",
		Commands: []string{"dump", "reset", "seed", "tool"}},
	"mcptest": {Package: "org.agentos.test.mcp.plugin", Label: "MCP test", Server: "test", Service: "org.agentos.test.mcp.plugin.TestMcpService"},
}

// ErrUnknownApp: an app folder with neither an app.json nor a row in the
// build's table of sample apps.
var ErrUnknownApp = errors.New("app has no app.json and is not a known sample app")

// appJSON returns the app.json for the app in dir (named name), with the
// build's version stamped in.
func appJSON(dir, name string, versionCode int64, versionName string) ([]byte, *apps.App, error) {
	var a *apps.App
	if b, err := os.ReadFile(filepath.Join(dir, apps.AppJSONName)); err == nil {
		if a, err = apps.ParseApp(b); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, apps.AppJSONName), err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	} else {
		f, ok := sampleApps[name]
		if !ok {
			return nil, nil, fmt.Errorf("%s: %w (add %s)", dir, ErrUnknownApp, filepath.Join(dir, apps.AppJSONName))
		}
		a = &apps.App{Package: f.Package, Label: f.Label, Binary: name, Caller: f.Caller, Commands: f.Commands,
			Services: []apps.Service{{Name: f.Service, Kind: apps.ServiceKindMCP, Server: f.Server}}}
	}
	a.VersionCode = versionCode
	a.VersionName = versionName
	if err := a.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: app.json: %w", dir, err)
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return append(b, '\n'), a, nil
}

// pluginName reads the plugin's name from its plugin.json ("" if none).
func pluginName(assetsDir string) string {
	b, err := os.ReadFile(filepath.Join(assetsDir, "plugin.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.Name
}
