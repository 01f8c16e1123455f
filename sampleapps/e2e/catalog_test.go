package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/agentoslab/agentlab/sampleapps/notes"
	"github.com/agentoslab/agentlab/sampleapps/sms"
	"github.com/agentoslab/agentlab/sampleapps/todo"
)

// packages are the installed packages of the sample apps by app name.
var packages = map[string]string{
	"alarm": alarm.Package, "calendar": calendar.Package, "notes": notes.Package,
	"todo": todo.Package, "sms": sms.Package, "mcptest": mcptest.Package,
}

// The sample_apps_e2e flow of spec §10.6 on a real runtime: the five
// apps and the test plugin installed as signed bundles, their plugins
// enabled; the catalog holds the 44 documented tools under their final
// names mcp__<app>__<app>__<tool>, enabled, WRITE except every *_delete and
// sms_send (HIGH); then a desktop session (paired as the lab's
// acp-bridge pairs) with consent mode allow calls tools of every app
// through the runtime — including a HIGH one, answered ALLOW_ONCE — and
// the apps' dumps show the effects.
func TestRuntimeCatalogAndCalls(t *testing.T) {
	t.Parallel()
	d := startDevice(t)
	apps := append(slices.Clone(sampleApps), "mcptest")
	d.install(apps...)
	var pkgs []string
	for _, a := range apps {
		pkgs = append(pkgs, packages[a])
	}
	plugins := d.enablePlugins(pkgs...)
	for _, a := range apps {
		if p := plugins[packages[a]]; p.Name != a || p.Status != "READY" {
			t.Errorf("plugin of %s: %+v", a, p)
		}
	}

	// The catalog: wait for the last app's last tool, then check them all.
	cat := d.catalog(finalName("sms", "sms_compose"))
	count := 0
	for _, app := range sampleApps {
		for _, tool := range documented[app] {
			name := finalName(app, tool)
			e, ok := cat[name]
			if !ok {
				t.Errorf("catalog lacks %s", name)
				continue
			}
			count++
			want := "WRITE"
			if high(tool) {
				want = "HIGH"
			}
			if e.Risk != want || !e.Enabled || e.Source.Plugin != app || e.Source.Server != app || e.Source.Tool != tool {
				t.Errorf("%s: %+v, want risk %s, enabled, source %s/%s/%s", name, e, want, app, app, tool)
			}
		}
	}
	if count != 44 {
		t.Errorf("%d of the 44 documented tools in the catalog", count)
	}
	// Nothing of the sample apps is READ: readOnlyHint never lowers risk.
	for name, e := range cat {
		if strings.HasPrefix(name, "mcp__") && e.Risk == "READ" {
			t.Errorf("%s is READ", name)
		}
	}

	// Calls through the runtime: a desktop session whose prompt is a model
	// script, consent answered by the consent mode.
	d.mustCtl("model", "set", "--provider", "scripted")
	d.mustCtl("consent", "mode", "allow")
	a := d.pairDesktop()
	var ses struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(a.call("session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, nil), &ses)
	if ses.SessionID == "" {
		t.Fatal("no session id")
	}
	script := `#!agentos-script
steps:
  - toolCalls:
      - mcp: [alarm, alarm, alarm_create]
        arguments: {time: "06:30", label: e2e-runtime}
      - mcp: [calendar, calendar, event_create]
        arguments: {title: e2e-runtime, start: "2026-10-13T15:00:00+08:00", reminder_minutes: [15]}
      - mcp: [notes, notes, note_create]
        arguments: {content: e2e-runtime, tags: [e2e]}
      - mcp: [todo, todo, todo_create]
        arguments: {title: e2e-runtime, priority: high}
      - mcp: [sms, sms, sms_thread_list]
        arguments: {}
      - mcp: [mcptest, test, echo]
        arguments: {text: e2e-runtime}
  - toolCalls:
      - mcp: [notes, notes, note_trash]
        arguments: {id: "$result[2].id"}
  - toolCalls:
      - mcp: [notes, notes, note_delete]
        arguments: {id: "$result[2].id"}
final: Done.
`
	nameOf := map[string]string{} // tool call id → final name
	status := map[string]string{} // final name → last status
	shown := map[string]string{}  // final name → "title (kind)"
	var order []string
	res := a.call("session/prompt", map[string]any{"sessionId": ses.SessionID, "prompt": []map[string]string{{"type": "text", "text": script}}},
		func(method string, params json.RawMessage) {
			var n struct {
				Update struct {
					SessionUpdate string  `json:"sessionUpdate"`
					ToolCallID    string  `json:"toolCallId"`
					Title         string  `json:"title"`
					Kind          string  `json:"kind"`
					Status        *string `json:"status"`
					Meta          struct {
						AgentOS struct {
							ToolName string `json:"toolName"`
						} `json:"org.agentos"`
					} `json:"_meta"`
				} `json:"update"`
			}
			if method != "session/update" || json.Unmarshal(params, &n) != nil || !strings.HasPrefix(n.Update.SessionUpdate, "tool_call") {
				return
			}
			u := n.Update
			// The final name is in _meta; the title is the tool's own.
			if name := u.Meta.AgentOS.ToolName; name != "" && nameOf[u.ToolCallID] == "" {
				nameOf[u.ToolCallID] = name
				order = append(order, name)
				shown[name] = u.Title + " (" + u.Kind + ")"
			}
			if name := nameOf[u.ToolCallID]; name != "" && u.Status != nil {
				status[name] = *u.Status
			}
		})
	var pr struct {
		StopReason string `json:"stopReason"`
	}
	if json.Unmarshal(res, &pr); pr.StopReason != "end_turn" {
		t.Fatalf("prompt ended %s", res)
	}
	wantCalls := []string{finalName("alarm", "alarm_create"), finalName("calendar", "event_create"), finalName("notes", "note_create"),
		finalName("todo", "todo_create"), finalName("sms", "sms_thread_list"), "mcp__mcptest__test__echo",
		finalName("notes", "note_trash"), finalName("notes", "note_delete")}
	for _, name := range wantCalls {
		if status[name] != "completed" {
			t.Errorf("%s ended %q (calls in order: %v)", name, status[name], order)
		}
	}
	// Each call shows its tool's title and the kind of its annotations.
	for name, want := range map[string]string{
		finalName("notes", "note_create"):   "Create a note (edit)",
		finalName("sms", "sms_thread_list"): "List SMS conversations (read)",
		finalName("notes", "note_delete"):   "Delete a note for good (delete)",
		"mcp__mcptest__test__echo":          "Echo (read)",
	} {
		if shown[name] != want {
			t.Errorf("%s shown as %q, want %q", name, shown[name], want)
		}
	}

	// Every call asked, and the consent mode answered for the owner
	// ("auto:"): ALLOW_FOR_SESSION where offered, ALLOW_ONCE for the HIGH
	// note_delete, whose card offers no session-wide choice.
	var recent []struct {
		Tool         string   `json:"tool"`
		Risk         string   `json:"risk"`
		Options      []string `json:"options"`
		AnsweredWith string   `json:"answeredWith"`
	}
	d.ctlJSON(&recent, "consent", "recent")
	asked := map[string]string{}
	for _, r := range recent {
		asked[r.Tool] = r.Risk + " " + r.AnsweredWith
		if r.Tool == finalName("notes", "note_delete") && slices.Contains(r.Options, "ALLOW_FOR_SESSION") {
			t.Errorf("the HIGH card offered %v", r.Options)
		}
	}
	for _, name := range wantCalls {
		want := "WRITE auto:ALLOW_FOR_SESSION"
		if name == finalName("notes", "note_delete") {
			want = "HIGH auto:ALLOW_ONCE"
		}
		if asked[name] != want {
			t.Errorf("consent for %s: %q, want %q", name, asked[name], want)
		}
	}

	// The effects, read from the apps' own dumps (as their uids).
	if dump := d.mustRun(alarm.Package, "dump"); !hasItem(dump["alarms"], "label", "e2e-runtime") {
		t.Errorf("alarm dump: %v", dump)
	}
	if dump := d.mustRun(calendar.Package, "dump"); !hasItem(dump["events"], "title", "e2e-runtime") {
		t.Errorf("calendar dump: %v", dump)
	}
	if dump := d.mustRun(todo.Package, "dump"); !hasItem(dump["todos"], "title", "e2e-runtime") {
		t.Errorf("todo dump: %v", dump)
	}
	// The note was created, trashed and deleted for good.
	if dump := d.mustRun(notes.Package, "dump"); dump["total"] != 0.0 {
		t.Errorf("notes dump: %v", dump)
	}
}

// hasItem reports whether list (a JSON array of objects) has an object
// whose key equals value.
func hasItem(list any, key, value string) bool {
	items, _ := list.([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m[key] == value {
			return true
		}
	}
	return false
}
