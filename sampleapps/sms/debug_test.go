package sms

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
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

func completedRound() *scriptedAgent {
	ref := func(p, tool string) *notes.ToolScopeEntry { return &notes.ToolScopeEntry{Plugin: p, Tool: tool} }
	return &scriptedAgent{stop: "end_turn", events: []notes.Event{
		{Kind: notes.EventRunning},
		{Kind: notes.EventToolCall, ToolCallID: "c1", Tool: "event_create", Ref: ref("calendar", "event_create"), Status: notes.StatusCompleted,
			ArgumentsJSON: `{"title":"项目评审会","start":"2026-10-13T10:00:00+08:00","reminder_minutes":[15]}`},
		{Kind: notes.EventToolCall, ToolCallID: "c2", Tool: "todo_create", Ref: ref("todo", "todo_create"), Status: notes.StatusCompleted},
		{Kind: notes.EventToolCall, ToolCallID: "c3", Tool: "alarm_create", Ref: ref("alarm", "alarm_create"), Status: notes.StatusDenied},
		{Kind: notes.EventText, Text: "已创建评审会和待办；闹钟被拒绝。"},
		{Kind: notes.EventDone, StopReason: "end_turn"},
	}}
}

func TestDebugGolden(t *testing.T) {
	t.Parallel()
	agent := completedRound()
	a, clk := newApp(t, sampletest.Location(t, "Asia/Shanghai"), agent)
	doc := map[string]any{}
	doc["seed"] = sampletest.Debug(t, a, "seed")
	doc["seed_again"] = sampletest.Debug(t, a, "seed")
	doc["set"] = sampletest.Debug(t, a, "set", "rate_limit", "3")
	doc["instructions_default"] = sampletest.Debug(t, a, "instructions")
	doc["raw_prompt"] = sampletest.Debug(t, a, "raw_prompt", `{"address":"+8613700000002"}`)
	doc["ask_agent"] = sampletest.Debug(t, a, "ask_agent", `{"address":"+8613700000002"}`)
	doc["processed"] = sampletest.Debug(t, a, "processed")
	sampletest.OK(t, a, "sms_send", `{"to":"+8613700000001","text":"收到，后天见。"}`)
	sampletest.OK(t, a, "sms_compose", `{"to":"+8613700000003","text":"草稿"}`)
	clk.Advance(3 * time.Second)
	doc["dump"] = sampletest.Debug(t, a, "dump")
	doc["reset"] = sampletest.Debug(t, a, "reset")
	doc["dump_after_reset"] = sampletest.Debug(t, a, "dump")
	golden.JSON(t, filepath.Join("testdata", "debug.golden.json"), doc)
	if len(agent.prompts) != 1 || agent.prompts[0] != doc["raw_prompt"].(map[string]any)["prompt"] {
		t.Error("ask_agent did not send the raw_prompt prompt")
	}
	if len(agent.scope) != 3 {
		t.Errorf("scope %v", agent.scope)
	}
}

// The upstream SMS end-to-end flow (spec §10.5) against a scripted agent.
func TestAskAgentFlow(t *testing.T) {
	t.Parallel()
	agent := completedRound()
	a, clk := newApp(t, sampletest.Location(t, "Asia/Shanghai"), agent)
	sampletest.Debug(t, a, "seed")
	work := `{"address":"+8613700000002"}`

	// create: four messages sent, all marked processed.
	rep := sampletest.Debug(t, a, "ask_agent", work).(*Report)
	if rep.State != "done" || rep.Messages != 4 || rep.Candidates != 4 || !rep.MarkedProcessed || rep.Created.Events != 1 || rep.Created.Todos != 1 || rep.Created.Denied != 1 {
		t.Fatalf("create: %+v", rep)
	}
	if n := sampletest.Debug(t, a, "processed").(map[string]int)["count"]; n != 4 {
		t.Fatalf("processed %d", n)
	}

	// only_new: one new message → only it is sent; candidates 5.
	clk.Advance(time.Hour)
	sampletest.Debug(t, a, "inbox", "add", "+86 137 0000 0002", "下午4点和客户开电话会。")
	rep = sampletest.Debug(t, a, "ask_agent", work).(*Report)
	if rep.Messages != 1 || rep.Candidates != 5 {
		t.Fatalf("only_new: %+v", rep)
	}
	last := agent.prompts[len(agent.prompts)-1]
	if !strings.Contains(last, "下午4点和客户开电话会") || strings.Contains(last, "评审会") {
		t.Errorf("only_new prompt carries old messages:\n%s", last)
	}

	// ask_agent_status shows the last round's final report.
	var st Report
	if err := json.Unmarshal(sampletest.Debug(t, a, "ask_agent_status").(json.RawMessage), &st); err != nil || st.Pending ||
		st.State != rep.State || st.Messages != 1 || st.Candidates != 5 || st.Address != "+8613700000002" || st.Created != rep.Created {
		t.Fatalf("status after only_new: %+v %v", st, err)
	}

	// Nothing new: refused locally, nothing sent.
	sent := len(agent.prompts)
	rep = sampletest.Debug(t, a, "ask_agent", work).(*Report)
	if rep.Error == nil || *rep.Error != "NOTHING_TO_SEND" || !strings.HasPrefix(*rep.ErrorDetail, "Nothing to send") || len(agent.prompts) != sent {
		t.Fatalf("nothing new: %+v", rep)
	}
	if err := json.Unmarshal(sampletest.Debug(t, a, "ask_agent_status").(json.RawMessage), &st); err != nil || st.Error == nil || *st.Error != "NOTHING_TO_SEND" {
		t.Fatalf("status after a local refusal: %+v %v", st, err)
	}
	if _, err := a.Debug(context.Background(), "ask_agent_stop", nil); !errors.Is(err, notes.ErrNotRunning) {
		t.Fatalf("stop with nothing running: %v", err)
	}

	// include_processed re-sends all five.
	rep = sampletest.Debug(t, a, "ask_agent", `{"address":"+8613700000002","include_processed":true}`).(*Report)
	if rep.Messages != 5 || rep.Error != nil {
		t.Fatalf("include_processed: %+v", rep)
	}

	// A one-off instruction override reaches the prompt but is not stored.
	sampletest.Debug(t, a, "inbox", "add", "+8613700000002", "周三前把合同寄出去。")
	sampletest.Debug(t, a, "ask_agent", `{"address":"+8613700000002","instructions":"待办一律高优先级，标题以【已确认】开头。"}`)
	if !strings.Contains(agent.prompts[len(agent.prompts)-1], "The user's instructions:\n待办一律高优先级") {
		t.Error("override not in the prompt")
	}
	if in := sampletest.Debug(t, a, "instructions").(map[string]any); in["customized"] != false || in["text"] != DefaultInstructions {
		t.Errorf("stored instructions changed: %v", in)
	}
}

func TestAskAgentMarksOnlyFinishedRounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		agent *scriptedAgent
		mark  bool
	}{
		{"finished", &scriptedAgent{stop: "end_turn"}, true},
		{"max turns is finished too", &scriptedAgent{stop: "max_turn_requests"}, true},
		{"cancelled", &scriptedAgent{stop: "cancelled"}, false},
		{"failed", &scriptedAgent{err: &notes.AgentError{Kind: notes.NoModel, Detail: "No model is configured in AgentOS."}}, false},
		{"disconnected", &scriptedAgent{err: errors.New("pipe closed")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newApp(t, time.UTC, tc.agent)
			sampletest.Debug(t, a, "seed")
			rep := sampletest.Debug(t, a, "ask_agent", `{"address":"+8613700000003"}`).(*Report)
			n := sampletest.Debug(t, a, "processed").(map[string]int)["count"]
			if rep.MarkedProcessed != tc.mark || (n == 1) != tc.mark {
				t.Errorf("marked %v, ledger %d; report %+v", rep.MarkedProcessed, n, rep)
			}
		})
	}
}

func TestAskAgentRefusals(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	if _, err := a.Debug(context.Background(), "ask_agent", []string{`{"address":"+8613700000002"}`}); err == nil || !strings.Contains(err.Error(), "No AgentOS connection") {
		t.Errorf("no agent: %v", err)
	}
	b, _ := newApp(t, time.UTC, &scriptedAgent{stop: "end_turn"})
	rep := sampletest.Debug(t, b, "ask_agent", `{"address":"+8613799999999"}`).(*Report)
	if rep.Error == nil || *rep.Error != "NOTHING_TO_SEND" {
		t.Errorf("unknown thread: %+v", rep)
	}
	sampletest.Debug(t, b, "set", "mode", "compose_only")
	sampletest.Debug(t, b, "seed")
	if _, err := b.Debug(context.Background(), "ask_agent", []string{`{"address":"+8613700000002"}`}); err == nil || err.Error() != NoPermission {
		t.Errorf("compose_only: %v", err)
	}
	for _, tc := range []struct{ args, want string }{
		{`{}`, `Missing required parameter "address".`},
		{`{"address":"x","instructions":"` + strings.Repeat("y", MaxInstructions+1) + `"}`, "The instructions are too long (4001 characters; the limit is 4000)."},
		{`{"address":"x","include_processed":"yes"}`, `Parameter "include_processed" must be true or false.`},
	} {
		_, err := b.Debug(context.Background(), "raw_prompt", []string{tc.args})
		if s, _ := apptool.IsUserError(err); s != tc.want {
			t.Errorf("%s: %v", tc.args, err)
		}
	}
}

func TestDebugCommands(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	var ue *apptool.UsageError
	for _, args := range [][]string{{"inbox"}, {"inbox", "add", "x"}, {"inbox", "add", "x", "y", "--when", "z"}, {"set", "mode"}, {"instructions", "bogus"}, {"dump", "x"}, {"fly"}} {
		if _, err := a.Debug(context.Background(), args[0], args[1:]); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "mode", "airplane"}, "mode must be full, partial or compose_only."},
		{[]string{"set", "rate_limit", "31"}, "rate_limit must be a whole number from 1 to 30."},
		{[]string{"set", "rate_limit", "0"}, "rate_limit must be a whole number from 1 to 30."},
		{[]string{"set", "mask_codes", "maybe"}, "mask_codes must be true or false."},
		{[]string{"set", "color", "red"}, `Unknown setting "color"; the settings are mode, mask_codes, allow_short_numbers, rate_limit, instructions.`},
		{[]string{"inbox", "add", "", "x"}, "The address must be 1 to 64 characters."},
		{[]string{"inbox", "add", "+86", " "}, "The message text must not be empty."},
		{[]string{"inbox", "add", "+86", "x", "--at", "yesterday"}, "--at must be an ISO-8601 time with offset, such as 2026-10-12T09:30:00+08:00."},
		{[]string{"instructions", "set", strings.Repeat("y", MaxInstructions+1)}, "The instructions are too long (4001 characters; the limit is 4000)."},
	} {
		_, err := a.Debug(context.Background(), tc.args[0], tc.args[1:])
		if s, _ := apptool.IsUserError(err); s != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	sampletest.Debug(t, a, "instructions", "set", "只建待办。")
	if in := sampletest.Debug(t, a, "instructions").(map[string]any); in["customized"] != true || in["text"] != "只建待办。" {
		t.Errorf("after set: %v", in)
	}
	sampletest.Debug(t, a, "instructions", "reset")
	if in := sampletest.Debug(t, a, "instructions").(map[string]any); in["customized"] != false || in["text"] != DefaultInstructions {
		t.Errorf("after reset: %v", in)
	}
}

// FuzzToolHandlers feeds arbitrary JSON to every SMS tool: no panic, every
// error a user sentence, and a failed call leaves the store unchanged.
func FuzzToolHandlers(f *testing.F) {
	seeds := []string{`{}`, `{"address":"+8613700000001"}`, `{"query":"验证码"}`, `{"to":"+8613700000002","text":"hi"}`, `{"to":"10086","text":"TD"}`,
		`{"id":1}`, `{"to":"1","text":"\u200b"}`, `{"limit":50,"offset":1}`, `{"address":"x","since":"2026-10-12","until":"2026-10-11T00:00:00Z"}`, `null`, `[1]`, `{"id":1e999}`}
	for i := range 6 {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	a, clk := newApp(f, time.UTC, nil)
	if _, err := a.Debug(context.Background(), "seed", nil); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tools := a.Tools()
		tl := tools[int(which)%len(tools)]
		// Move past the dedup and rate windows so sends can succeed.
		clk.Advance(11 * time.Minute)
		before := dumpJSON(t, a)
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
			if dumpJSON(t, a) != before {
				t.Fatalf("%s: failed call on %q changed the store", tl.Name, raw)
			}
			return
		}
		s, err := apptool.Compact(out)
		if err != nil {
			t.Fatalf("%s: result does not encode: %v", tl.Name, err)
		}
		if n := len([]rune(s)); n > ResultBudget {
			t.Fatalf("%s: result %d characters", tl.Name, n)
		}
	})
}
