package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/sampleapps/alarm"
	"github.com/agentoslab/agentlab/sampleapps/calendar"
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

// noteText is the scheduling note of the upstream end-to-end case (spec
// §10.4), the first of the notes app's seed notes.
const noteText = "明天下午3点和王总开会，3号会议室，提前15分钟提醒我；每周一早上7点跑步。"

// The notes app's caller flow end to end (spec §10.4) on a real runtime
// and the scripted model: `ctl app run … ask_agent` runs as the notes uid
// and reaches the caller socket the launcher names; the runtime asks the
// owner to authorize the app (the round shows waiting_authorization
// meanwhile) and the owner allows it with `ctl callers answer`; the model
// calls event_create and alarm_create by their raw names; each call's
// consent card names the notes app as initiator and is answered
// ALLOW_ONCE with `ctl consent respond`; the report's counts equal what
// the calendar's and the alarm's dumps hold.
func TestNotesCallerFlow(t *testing.T) {
	t.Parallel()
	d := startDevice(t)
	d.install("alarm", "calendar", "notes")
	d.enablePlugins(alarm.Package, calendar.Package, notes.Package)
	d.catalog(finalName("alarm", "alarm_create"))
	d.catalog(finalName("calendar", "event_create"))

	// The scripted model schedules what the note says, by raw tool names.
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	tomorrow := time.Now().In(shanghai).AddDate(0, 0, 1).Format("2006-01-02")
	script := fmt.Sprintf(`description: Schedule the note of spec 10.4.
steps:
  - text: 好的，我来安排。
    toolCalls:
      - mcp: [calendar, calendar, event_create]
        arguments: {title: 和王总开会, start: "%sT15:00:00+08:00", location: 3号会议室, reminder_minutes: [15]}
      - mcp: [alarm, alarm, alarm_create]
        arguments: {time: "07:00", label: 跑步, days: [mon]}
final: 已创建明天下午3点和王总的会议（提前15分钟提醒），以及每周一早上7点的跑步闹钟。
`, tomorrow)
	scriptPath := filepath.Join(apptest.OpenDir(t), "notes.yaml")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	d.mustCtl("model", "set", "--provider", "scripted", "--script", scriptPath)

	if seed := d.mustRun(notes.Package, "seed"); seed["total"] != 5.0 {
		t.Fatalf("seed: %v", seed)
	}
	dump := d.mustRun(notes.Package, "dump")
	if n := dump["notes"].([]any)[0].(map[string]any); n["id"] != 1.0 || n["content"] != noteText {
		t.Fatalf("note 1 is %v", n)
	}

	// ask_agent blocks until the round ends.
	ask := exec.Command(d.bin, "ctl", "--socket-prefix", d.prefix, "app", "run", notes.Package, "--timeout", "3m", "--", "ask_agent", `{"note_id":1}`)
	var askOut, askErr bytes.Buffer
	ask.Stdout, ask.Stderr = &askOut, &askErr
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	askDone := make(chan error, 1)
	go func() { askDone <- ask.Wait() }()
	t.Cleanup(func() {
		ask.Process.Kill()
		<-askDone
	})

	// The owner is asked to authorize the notes app; the round waits.
	var requestID string
	d.waitFor(30*time.Second, "the notes app's authorization card appears", func() bool {
		var l struct {
			Cards []struct{ RequestID, PackageName string }
		}
		r := d.ctl("callers", "list", "--json")
		json.Unmarshal([]byte(r.stdout), &l)
		for _, c := range l.Cards {
			if c.PackageName == notes.Package {
				requestID = c.RequestID
			}
		}
		return requestID != ""
	})
	d.waitFor(30*time.Second, "ask_agent_status shows the round waiting for authorization", func() bool {
		code, st := d.appRun(time.Minute, notes.Package, "ask_agent_status")
		return code == 0 && st["current_state"] == "waiting_authorization" && st["pending"] == true
	})
	if out := d.mustCtl("callers", "answer", requestID, "allow"); !strings.Contains(out, "accepted") {
		t.Fatalf("answer: %s", out)
	}

	// Two consent cards, one per creation, both initiated by the notes app.
	answered := map[string]bool{}
	wantTools := []string{finalName("calendar", "event_create"), finalName("alarm", "alarm_create")}
	d.waitFor(60*time.Second, "both consent cards are answered", func() bool {
		var pending []struct {
			RequestID     string `json:"requestId"`
			ToolName      string `json:"toolName"`
			Risk          string `json:"risk"`
			CallerPackage string `json:"callerPackage"`
			InitiatorLine string `json:"initiatorLine"`
		}
		d.ctlJSON(&pending, "consent", "pending")
		for _, c := range pending {
			if answered[c.RequestID] {
				continue
			}
			if !slices.Contains(wantTools, c.ToolName) || c.Risk != "WRITE" || c.CallerPackage != notes.Package ||
				!strings.Contains(c.InitiatorLine, notes.Package) {
				t.Errorf("unexpected card %+v", c)
			}
			d.mustCtl("consent", "respond", c.RequestID, "ALLOW_ONCE")
			answered[c.RequestID] = true
		}
		return len(answered) == 2
	})

	var err2 error
	select {
	case err2 = <-askDone:
		askDone <- err2
	case <-time.After(2 * time.Minute):
		t.Fatalf("ask_agent did not end; status: %v", d.mustRun(notes.Package, "ask_agent_status"))
	}
	if err2 != nil {
		t.Fatalf("ask_agent: %v\nstdout: %s\nstderr: %s", err2, askOut.String(), askErr.String())
	}
	var rep struct {
		State   string  `json:"state"`
		Pending bool    `json:"pending"`
		Gateway string  `json:"gateway"`
		Error   *string `json:"error"`
		NoteID  int     `json:"note_id"`
		Created struct {
			Events, Alarms, Todos, Denied, Failed int
		} `json:"created"`
		Items []struct {
			Kind, Tool, Plugin, Status string
		} `json:"items"`
		AgentText string `json:"agent_text"`
	}
	if err := json.Unmarshal(askOut.Bytes(), &rep); err != nil {
		t.Fatalf("report %q: %v", askOut.String(), err)
	}
	if rep.State != "done" || rep.Pending || rep.Error != nil || rep.Gateway != "agentos" || rep.NoteID != 1 ||
		rep.Created.Events != 1 || rep.Created.Alarms != 1 || rep.Created.Todos != 0 || rep.Created.Denied != 0 || rep.Created.Failed != 0 ||
		!strings.Contains(rep.AgentText, "跑步闹钟") {
		t.Errorf("report %s", askOut.String())
	}
	// Ref passed through: the items carry raw names and their plugins.
	kinds := map[string]string{}
	for _, it := range rep.Items {
		kinds[it.Plugin+"/"+it.Tool] = it.Kind + " " + it.Status
	}
	if kinds["calendar/event_create"] != "event created" || kinds["alarm/alarm_create"] != "alarm created" || len(rep.Items) != 2 {
		t.Errorf("items %+v", rep.Items)
	}

	// The report's counts equal the apps' contents.
	cal := d.mustRun(calendar.Package, "dump")
	events, _ := cal["events"].([]any)
	if len(events) != rep.Created.Events {
		t.Errorf("calendar holds %d events, the report says %d", len(events), rep.Created.Events)
	}
	for _, e := range events {
		ev := e.(map[string]any)
		if ev["title"] != "和王总开会" || ev["start"] != tomorrow+"T15:00:00+08:00" || fmt.Sprint(ev["reminder_minutes"]) != "[15]" {
			t.Errorf("event %v", ev)
		}
	}
	al := d.mustRun(alarm.Package, "dump")
	alarms, _ := al["alarms"].([]any)
	if len(alarms) != rep.Created.Alarms {
		t.Errorf("alarm app holds %d alarms, the report says %d", len(alarms), rep.Created.Alarms)
	}
	for _, a := range alarms {
		if m := a.(map[string]any); m["time"] != "07:00" || fmt.Sprint(m["days"]) != "[mon]" || m["label"] != "跑步" {
			t.Errorf("alarm %v", m)
		}
	}
	// The notes themselves are untouched, and the status shows the report.
	if dump := d.mustRun(notes.Package, "dump"); dump["total"] != 5.0 {
		t.Errorf("notes after the round: %v", dump["total"])
	}
	if st := d.mustRun(notes.Package, "ask_agent_status"); st["state"] != "done" || st["pending"] != false {
		t.Errorf("status after the round: %v", st)
	}
}
