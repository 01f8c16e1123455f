package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/agentoslab/agentlab/sampleapps/notes"
	"github.com/agentoslab/agentlab/sampleapps/sms"
	"github.com/agentoslab/agentlab/sampleapps/todo"
)

// appFacts is what app.json says about a sample app that has no app.json
// of its own, apart from the version the build stamps and the label (the
// plugin's display name). The facts come from the apps' own packages, so
// the bundles follow the apps: a new debug command is allowed as soon as
// the app has it.
type appFacts struct {
	Package  string
	Server   string
	Service  string
	Caller   bool
	Commands []string
}

var sampleApps = map[string]appFacts{
	"alarm":    {Package: alarm.Package, Server: alarm.Server, Service: alarm.Service, Commands: alarm.DebugCommands},
	"calendar": {Package: calendar.Package, Server: calendar.Server, Service: calendar.Service, Commands: calendar.DebugCommands},
	"notes":    {Package: notes.Package, Server: notes.Server, Service: notes.Service, Caller: true, Commands: notes.DebugCommands},
	"sms":      {Package: sms.Package, Server: sms.Server, Service: sms.Service, Caller: true, Commands: sms.DebugCommands},
	"todo":     {Package: todo.Package, Server: todo.Server, Service: todo.Service, Commands: todo.DebugCommands},
	"mcptest":  {Package: mcptest.Package, Server: mcptest.Server, Service: mcptest.Service},
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
		label := displayName(filepath.Join(dir, "assets", "agent-plugin"))
		if label == "" {
			label = name
		}
		a = &apps.App{Package: f.Package, Label: label, Binary: name, Caller: f.Caller, Commands: slices.Clone(f.Commands),
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

// displayName reads the plugin's display name (plugin.json
// extensions."com.openai".interface.displayName), "" if none.
func displayName(assetsDir string) string {
	b, err := os.ReadFile(filepath.Join(assetsDir, "plugin.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Extensions struct {
			OpenAI struct {
				Interface struct {
					DisplayName string `json:"displayName"`
				} `json:"interface"`
			} `json:"com.openai"`
		} `json:"extensions"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.Extensions.OpenAI.Interface.DisplayName
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
