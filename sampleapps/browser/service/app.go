package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/aci"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/browser"
)

// DebugCommands are the browser binary's one-shot commands (app.json
// "commands"): caps lists the capabilities; cap <id> ['<json>'] calls one
// in-process through the real socket path; search_engine '<json>'
// configures an engine; settings prints the settings.
var DebugCommands = []string{"caps", "cap", "search_engine", "settings"}

// App is the browser's command-line app (apptool.App): its data
// directory's settings, the engine and the server.
type App struct {
	dir    string
	logger *slog.Logger
	b      *browser.Browser
}

var _ apptool.App = (*App)(nil)

// Open opens the browser with dir's settings.
func Open(ctx context.Context, dir string, logger *slog.Logger) (*App, error) {
	s, err := browser.LoadSettings(dir)
	if err != nil {
		return nil, err
	}
	b := browser.New(&browser.Options{
		SearchEngines: s.Engines(), DefaultEngine: s.DefaultEngine,
		Package: os.Getenv("AGENTOS_PACKAGE"), VersionName: browser.VersionName, VersionCode: browser.VersionCode,
	})
	return &App{dir: dir, logger: logger, b: b}, nil
}

// Tools is empty: the browser offers capabilities over ACI, not MCP tools.
func (a *App) Tools() []apptool.Tool { return nil }

// Close releases nothing (the engine keeps its state in memory).
func (a *App) Close() error { return nil }

// Server is the browser's ACI server.
func (a *App) Server() (*aci.Server, error) { return New(a.b, &aci.Options{Logger: a.logger}) }

// Debug runs one debug command.
func (a *App) Debug(ctx context.Context, cmd string, args []string) (any, error) {
	switch cmd {
	case "caps":
		var out []json.RawMessage
		for _, c := range Capabilities(a.b) {
			d := c.Declaration()
			enc, err := d.Encode()
			if err != nil {
				return nil, err
			}
			out = append(out, json.RawMessage(enc))
		}
		return map[string]any{"capabilities": out}, nil
	case "cap":
		if len(args) < 1 || len(args) > 2 {
			return nil, &apptool.UsageError{Msg: "cap <id> ['<json args>']"}
		}
		raw := "{}"
		if len(args) == 2 {
			raw = args[1]
		}
		return a.callSelf(ctx, args[0], raw)
	case "search_engine":
		if len(args) != 1 {
			return nil, &apptool.UsageError{Msg: `search_engine '{"name":"lab","url":"http://host/search?q={q}","default":true}'`}
		}
		var in struct {
			Name    string `json:"name"`
			URL     string `json:"url"`
			Default bool   `json:"default"`
		}
		if err := json.Unmarshal([]byte(args[0]), &in); err != nil {
			return nil, &apptool.UserError{Sentence: "The argument must be a JSON object with name and url."}
		}
		if err := browser.CheckEngine(in.Name, in.URL); err != nil {
			return nil, &apptool.UserError{Sentence: err.Error() + "."}
		}
		s, err := browser.LoadSettings(a.dir)
		if err != nil {
			return nil, err
		}
		if s.SearchEngines == nil {
			s.SearchEngines = map[string]string{}
		}
		s.SearchEngines[in.Name] = in.URL
		if in.Default {
			s.DefaultEngine = in.Name
		}
		if err := browser.SaveSettings(a.dir, s); err != nil {
			return nil, err
		}
		return s, nil
	case "settings":
		s, err := browser.LoadSettings(a.dir)
		if err != nil {
			return nil, err
		}
		return map[string]any{"settings": s, "engines": browser.EngineNames(s.Engines())}, nil
	}
	return nil, &apptool.UsageError{Msg: fmt.Sprintf("unknown command %q", cmd)}
}

// callSelf serves the capabilities on a private socket for one call and
// makes it as the runtime would: arguments converted to the declared
// types, the capability's own budget.
func (a *App) callSelf(ctx context.Context, id, args string) (any, error) {
	srv, err := a.Server()
	if err != nil {
		return nil, err
	}
	var decl *wire.Capability
	for _, c := range srv.Capabilities() {
		if c.ID == id {
			decl = &c
			break
		}
	}
	if decl == nil {
		return nil, &apptool.UserError{Sentence: fmt.Sprintf("No capability %q; the caps command lists them.", id)}
	}
	params, err := wire.ConvertArgs(decl, json.RawMessage(args))
	if err != nil {
		return nil, &apptool.UserError{Sentence: err.Error() + "."}
	}
	name := fmt.Sprintf("@aci-browser-debug-%d", os.Getpid())
	ctx, stop := context.WithCancel(ctx)
	sv, err := srv.Start(ctx, name)
	if err != nil {
		stop()
		return nil, err
	}
	defer func() { stop(); sv.Wait() }()
	cl := &wire.Client{Socket: name, UID: os.Getuid()}
	resp, err := cl.Call(ctx, id, params, decl.SyncTimeout)
	if err != nil {
		return nil, err
	}
	if e := resp.Err(); e != nil {
		return nil, &apptool.UserError{Sentence: e.Error()}
	}
	out := map[string]any{}
	for k, v := range resp.Result {
		if v.Type() == wire.TypeBytes {
			out[k] = fmt.Sprintf("<%d bytes>", len(v.BytesVal()))
			continue
		}
		out[k] = v.Any()
	}
	return map[string]any{"result": out}, nil
}
