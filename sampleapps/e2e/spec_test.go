package e2e

import "strings"

// documented are the 44 documented tools of spec §9.7 per app (plugin
// name = server name = app name). The apps offer a few more (alarm_snooze,
// calendar_update), which the checks allow.
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

// sampleApps are the five apps of spec §9, in a fixed order.
var sampleApps = []string{"alarm", "calendar", "notes", "todo", "sms"}

// high reports whether a sample tool's expected catalog risk is HIGH
// (every *_delete and sms_send); every other sample tool is WRITE.
func high(tool string) bool { return strings.HasSuffix(tool, "_delete") || tool == "sms_send" }

// finalName is a sample tool's catalog name: mcp__<app>__<app>__<tool>.
func finalName(app, tool string) string { return "mcp__" + app + "__" + app + "__" + tool }
