package apptool_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/notes"
	"github.com/agentoslab/agentlab/sampleapps/sms"
	"github.com/agentoslab/agentlab/sampleapps/todo"
)

// documented are the 44 documented tools of spec §9.7, per app.
var documented = map[string][]string{
	"alarm": {"alarm_list", "alarm_get", "alarm_create", "alarm_update", "alarm_set_enabled", "alarm_delete", "alarm_next",
		"alarm_dismiss", "alarm_system_next"},
	"calendar": {"calendar_list", "calendar_create", "calendar_delete", "event_list", "event_get", "event_create", "event_update",
		"event_delete", "event_search", "agenda_today", "free_slots"},
	"notes": {"note_list", "note_get", "note_create", "note_update", "note_append", "note_search", "note_trash", "note_restore",
		"note_delete", "tag_list"},
	"todo": {"todo_list", "todo_get", "todo_create", "todo_update", "todo_set_status", "todo_delete", "todo_search", "todo_summary"},
	"sms":  {"sms_thread_list", "sms_message_list", "sms_search", "sms_send", "sms_send_status", "sms_compose"},
}

// extras are the tools the apps offer beyond the documented minimum.
var extras = map[string][]string{"alarm": {"alarm_snooze"}, "calendar": {"calendar_update"}}

type app interface {
	Tools() []apptool.Tool
	Close() error
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// The five sample apps together offer the 44 documented tools (plus the
// extras), and their annotations give the catalog's expected risk: WRITE
// for every tool except each *_delete and sms_send, which are HIGH
// (destructiveHint true; spec §5.1, §9.7).
func TestSampleCatalog(t *testing.T) {
	ctx := context.Background()
	open := map[string]func(dir string) (app, error){
		"alarm":    func(d string) (app, error) { return alarm.Open(ctx, d, nil) },
		"calendar": func(d string) (app, error) { return calendar.Open(ctx, d, nil) },
		"notes":    func(d string) (app, error) { return notes.Open(ctx, d, nil) },
		"todo":     func(d string) (app, error) { return todo.Open(ctx, d, nil) },
		"sms":      func(d string) (app, error) { return sms.Open(ctx, d, nil) },
	}
	total := 0
	for name, want := range documented {
		a, err := open[name](t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		have := map[string]apptool.Tool{}
		for _, tl := range a.Tools() {
			if _, dup := have[tl.Name]; dup || !toolName.MatchString(tl.Name) {
				t.Errorf("%s: bad or duplicate tool name %q", name, tl.Name)
			}
			have[tl.Name] = tl
			if final := "mcp__" + name + "__" + name + "__" + tl.Name; len(final) > 64 {
				t.Errorf("%s: final name %s is longer than 64", name, final)
			}
			var schema struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" {
				t.Errorf("%s.%s: input schema is not an object", name, tl.Name)
			}
			high := strings.HasSuffix(tl.Name, "_delete") || tl.Name == "sms_send"
			d := tl.Annotations.DestructiveHint
			if high != (d != nil && *d) {
				t.Errorf("%s.%s: destructiveHint = %v, want %v", name, tl.Name, d != nil && *d, high)
			}
		}
		for _, w := range append(append([]string{}, want...), extras[name]...) {
			if _, ok := have[w]; !ok {
				t.Errorf("%s: tool %s missing", name, w)
			}
		}
		if len(have) != len(want)+len(extras[name]) {
			t.Errorf("%s: %d tools, want %d documented + %d extra", name, len(have), len(want), len(extras[name]))
		}
		total += len(want)
		a.Close()
	}
	if total != 44 {
		t.Fatalf("documented tools = %d, want 44", total)
	}
}
