package notes

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/golden"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

func TestDebugGolden(t *testing.T) {
	t.Parallel()
	agent := &scriptedAgent{stop: "end_turn", events: []Event{
		{Kind: EventWaiting}, {Kind: EventRunning},
		tcRef("call_1", "calendar", "event_create", StatusPendingApproval),
		{Kind: EventToolCall, ToolCallID: "call_1", Tool: "event_create", Ref: &ToolScopeEntry{"calendar", "event_create"}, Status: StatusCompleted,
			ArgumentsJSON: `{"title":"和王总开会","start":"2026-10-13T15:00:00+08:00","reminder_minutes":[15]}`, ResultJSON: `{"id":"local:1"}`},
		tc("call_2", "mcp__alarm__alarm__alarm_create", StatusDenied),
		{Kind: EventText, Text: "已创建会议；跑步闹钟被拒绝。"},
		{Kind: EventDone, StopReason: "end_turn"},
	}}
	a, clk := newApp(t, sampletest.Location(t, "Asia/Shanghai"), agent)
	seed1 := sampletest.Debug(t, a, "seed")
	clk.Advance(time.Hour)
	seed2 := sampletest.Debug(t, a, "seed")
	sampletest.OK(t, a, "note_trash", `{"id":5}`)
	dump := sampletest.Debug(t, a, "dump")
	raw := sampletest.Debug(t, a, "raw_prompt", `{"note_id":1}`)
	ask := sampletest.Debug(t, a, "ask_agent", `{"note_id":1}`)
	reset := sampletest.Debug(t, a, "reset")
	afterReset := sampletest.Debug(t, a, "dump")
	golden.JSON(t, filepath.Join("testdata", "debug.golden.json"), map[string]any{
		"seed": seed1, "seed_again": seed2, "dump": dump, "raw_prompt": raw, "ask_agent": ask, "reset": reset, "dump_after_reset": afterReset,
	})
	var rawDoc struct{ Prompt string }
	rawJSON, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rawJSON, &rawDoc); err != nil {
		t.Fatal(err)
	}
	if agent.calls != 1 || agent.prompt != rawDoc.Prompt {
		t.Error("ask_agent did not send the raw_prompt prompt")
	}
	if len(agent.scope) != 3 {
		t.Errorf("scope %v", agent.scope)
	}
}

func TestAskAgent(t *testing.T) {
	t.Parallel()
	t.Run("no agent", func(t *testing.T) {
		a, _ := newApp(t, time.UTC, nil)
		_, err := a.Debug(context.Background(), "ask_agent", []string{`{"text":"x"}`})
		if s, ok := apptool.IsUserError(err); !ok || !strings.Contains(s, "No AgentOS connection") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("too large is refused locally", func(t *testing.T) {
		agent := &scriptedAgent{stop: "end_turn"}
		a, _ := newApp(t, time.UTC, agent)
		out := sampletest.Debug(t, a, "ask_agent", `{"text":"`+strings.Repeat("a", 16001)+`"}`).(*AskReport)
		if out.Error == nil || *out.Error != "TOO_LARGE" || out.State != StateError || out.TextChars != 16001 || agent.calls != 0 {
			t.Errorf("report %+v, calls %d", out, agent.calls)
		}
	})
	t.Run("selection wins over the note", func(t *testing.T) {
		agent := &scriptedAgent{stop: "end_turn"}
		a, _ := newApp(t, time.UTC, agent)
		sampletest.Debug(t, a, "seed")
		sampletest.Debug(t, a, "ask_agent", `{"note_id":1,"selection":"每周一早上7点跑步"}`)
		if !strings.HasSuffix(agent.prompt, "<note>\n每周一早上7点跑步\n</note>") {
			t.Errorf("prompt ends %q", agent.prompt[len(agent.prompt)-60:])
		}
	})
	t.Run("hard timeout", func(t *testing.T) {
		agent := &scriptedAgent{block: true}
		clk := sampletest.NewClock(t0)
		a, err := Open(context.Background(), t.TempDir(), &Options{Clock: clk.Now, Location: time.UTC, Agent: agent, AskTimeout: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		out := sampletest.Debug(t, a, "ask_agent", `{"text":"tomorrow 9:00 dentist"}`).(*AskReport)
		if !out.TimedOut || out.Error == nil || *out.Error != "TIMEOUT" {
			t.Errorf("report %+v", out)
		}
	})
	for _, tc := range []struct{ args, want string }{
		{`{}`, "Give exactly one of note_id and text."},
		{`{"note_id":1,"text":"x"}`, "Give exactly one of note_id and text."},
		{`{"note_id":9}`, "No note with id 9."},
		{`{"text":"x","selection":"y"}`, "selection goes with note_id, not with text."},
		{`{"text":"x","extra":1}`, `Unknown parameter "extra".`},
		{`{"text":"  "}`, "There is no text to send."},
	} {
		a, _ := newApp(t, time.UTC, &scriptedAgent{})
		_, err := a.Debug(context.Background(), "raw_prompt", []string{tc.args})
		if s, _ := apptool.IsUserError(err); s != tc.want {
			t.Errorf("raw_prompt %s: %v, want %q", tc.args, err, tc.want)
		}
	}
	a, _ := newApp(t, time.UTC, nil)
	var ue *apptool.UsageError
	if _, err := a.Debug(context.Background(), "dump", []string{"x"}); !errors.As(err, &ue) {
		t.Errorf("dump with args: %v", err)
	}
	if _, err := a.Debug(context.Background(), "fly", nil); !errors.As(err, &ue) {
		t.Errorf("unknown command: %v", err)
	}
}

func TestSeedSurvivesAndIsIdempotent(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	sampletest.Debug(t, a, "seed")
	sampletest.Debug(t, a, "seed")
	d := sampletest.Debug(t, a, "dump").(*Dump)
	if d.Total != len(SeedNotes) {
		t.Fatalf("total %d", d.Total)
	}
	found := false
	for _, n := range d.Notes {
		if strings.Contains(n.Content, "note_delete") {
			found = true
		}
	}
	if !found {
		t.Error("the injection note is not seeded")
	}
}

// FuzzToolHandlers feeds arbitrary JSON to every tool: no panic, every
// error is a user sentence, and a failed call leaves the store unchanged.
func FuzzToolHandlers(f *testing.F) {
	seeds := []string{`{}`, `{"id":1}`, `{"id":2,"content":"x","tags":["a"]}`, `{"query":"milk","limit":1}`, `{"id":1,"text":"y","separator":""}`,
		`{"id":1,"offset":3,"max_chars":2}`, `{"tag":"home","trashed":true,"archived":true}`, `null`, `[]`, `{"id":1e308}`, `{"id":-1}`, `{"content":"\u0000"}`}
	for i := range 10 {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	a, clk := newApp(f, time.UTC, nil)
	sampletest.OK(f, a, "note_create", `{"title":"Groceries","content":"milk","tags":["home"]}`)
	sampletest.OK(f, a, "note_create", `{"content":"trash me"}`)
	sampletest.OK(f, a, "note_trash", `{"id":2}`)
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tools := a.Tools()
		tl := tools[int(which)%len(tools)]
		before := dumpJSON(t, a)
		clk.Advance(time.Second)
		var out any
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s panicked on %q: %v", tl.Name, raw, r)
				}
			}()
			out, err = tl.Handler(context.Background(), json.RawMessage(raw))
		}()
		if err != nil {
			if _, ok := apptool.IsUserError(err); !ok {
				t.Fatalf("%s: non-user error %v on %q", tl.Name, err, raw)
			}
			if after := dumpJSON(t, a); after != before {
				t.Fatalf("%s: failed call on %q changed the store", tl.Name, raw)
			}
			return
		}
		if _, err := apptool.Compact(out); err != nil {
			t.Fatalf("%s: result does not encode: %v", tl.Name, err)
		}
	})
}
