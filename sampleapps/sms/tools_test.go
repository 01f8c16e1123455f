package sms

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

func TestToolCatalog(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	type hints struct{ readOnly, idempotent, destructive bool }
	want := []struct {
		name string
		h    hints
	}{
		{"sms_thread_list", hints{readOnly: true}},
		{"sms_message_list", hints{readOnly: true}},
		{"sms_search", hints{readOnly: true}},
		{"sms_send", hints{destructive: true}},
		{"sms_send_status", hints{readOnly: true}},
		{"sms_compose", hints{}},
	}
	tools := a.Tools()
	if len(tools) != len(want) {
		t.Fatalf("%d tools, want %d (spec §9.7: sms has 6)", len(tools), len(want))
	}
	is := func(p *bool) bool { return p != nil && *p }
	for i, w := range want {
		tl := tools[i]
		if tl.Name != w.name {
			t.Fatalf("tool %d = %s, want %s", i, tl.Name, w.name)
		}
		an := tl.Annotations
		if got := (hints{is(an.ReadOnlyHint), is(an.IdempotentHint), is(an.DestructiveHint)}); got != w.h {
			t.Errorf("%s annotations %+v, want %+v", tl.Name, got, w.h)
		}
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil {
			t.Fatalf("%s schema: %v", tl.Name, err)
		}
		if s.Type != "object" || s.Properties == nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s schema is not a closed object", tl.Name)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s requires undeclared %q", tl.Name, r)
			}
		}
		if tl.Description == "" || an.Title == "" {
			t.Errorf("%s: no description or title", tl.Name)
		}
	}
}

// seedInbox adds: 1 "+8613700000001" code message (-3h), 2 same thread
// (-1h), 3 "BANK" (-2h), 4 "+12025550123" long body (-30m).
func seedInbox(t *testing.T, a *App) {
	t.Helper()
	sampletest.Debug(t, a, "inbox", "add", "+8613700000001", "您的验证码是 482916，5分钟内有效。", "--at", "2026-10-12T03:00:00Z")
	sampletest.Debug(t, a, "inbox", "add", "13700000001", "Lunch at noon?", "--at", "2026-10-12T05:00:00Z")
	sampletest.Debug(t, a, "inbox", "add", "BANK", "Your login code: 7731. Do not share it.", "--at", "2026-10-12T04:00:00Z")
	sampletest.Debug(t, a, "inbox", "add", "+1 202-555-0123", strings.Repeat("long ", 300), "--at", "2026-10-12T05:30:00Z")
}

func TestTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(t *testing.T, a *App, clk *sampletest.Clock)
		tool    string
		args    string
		wantErr string
		check   func(t *testing.T, a *App, r map[string]any)
	}{
		// sms_thread_list
		{name: "threads", tool: "sms_thread_list", args: `{}`, check: func(t *testing.T, a *App, r map[string]any) {
			th := r["threads"].([]any)
			if len(th) != 3 || r["total"] != 3.0 {
				t.Fatalf("threads %v", r)
			}
			first := th[0].(map[string]any)
			if first["address"] != "+1 202-555-0123" || !strings.HasSuffix(first["snippet"].(string), "…") {
				t.Errorf("first %v", first)
			}
			second := th[1].(map[string]any) // the two addresses of one number are one thread
			if second["message_count"] != 2.0 || second["address"] != "13700000001" {
				t.Errorf("second %v", second)
			}
			if r["masking"].(map[string]any)["verification_codes"] != "masked" {
				t.Errorf("masking %v", r["masking"])
			}
		}},
		{name: "threads paging", tool: "sms_thread_list", args: `{"limit":1,"offset":1}`, check: func(t *testing.T, a *App, r map[string]any) {
			if len(r["threads"].([]any)) != 1 || r["next_offset"] != 2.0 || r["has_more"] != true {
				t.Errorf("%v", r)
			}
		}},
		{name: "threads limit", tool: "sms_thread_list", args: `{"limit":51}`, wantErr: `Parameter "limit" must be between 1 and 50.`},
		{name: "threads bad type", tool: "sms_thread_list", args: `{"offset":"1"}`, wantErr: `Parameter "offset" must be an integer.`},
		// sms_message_list
		{name: "messages by last 10 digits, masked", tool: "sms_message_list", args: `{"address":"137-0000-0001"}`, check: func(t *testing.T, a *App, r map[string]any) {
			ms := r["messages"].([]any)
			if len(ms) != 2 {
				t.Fatalf("%v", r)
			}
			code := ms[1].(map[string]any)
			if code["body"] != "您的验证码是 ••••••，5分钟内有效。" || code["code_masked"] != true || code["date"] != "2026-10-12T03:00:00+00:00" {
				t.Errorf("code message %v", code)
			}
		}},
		{name: "messages unmasked by setting", setup: func(t *testing.T, a *App, _ *sampletest.Clock) { sampletest.Debug(t, a, "set", "mask_codes", "false") },
			tool: "sms_message_list", args: `{"address":"BANK"}`, check: func(t *testing.T, a *App, r map[string]any) {
				m := r["messages"].([]any)[0].(map[string]any)
				if m["body"] != "Your login code: 7731. Do not share it." || m["code_masked"] != false || r["masking"].(map[string]any)["verification_codes"] != "visible" {
					t.Errorf("%v", r)
				}
			}},
		{name: "messages truncated at 1000", tool: "sms_message_list", args: `{"address":"+12025550123"}`, check: func(t *testing.T, a *App, r map[string]any) {
			m := r["messages"].([]any)[0].(map[string]any)
			if len([]rune(m["body"].(string))) != 1000 || m["truncated"] != true {
				t.Errorf("truncation %v", m["truncated"])
			}
		}},
		{name: "messages since/until", tool: "sms_message_list", args: `{"address":"13700000001","since":"2026-10-12T11:30:00+08:00","until":"2026-10-13"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["total"] != 1.0 || r["messages"].([]any)[0].(map[string]any)["body"] != "Lunch at noon?" {
				t.Errorf("%v", r)
			}
		}},
		{name: "messages unknown address is empty", tool: "sms_message_list", args: `{"address":"+8613999999999"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["total"] != 0.0 || len(r["messages"].([]any)) != 0 {
				t.Errorf("%v", r)
			}
		}},
		{name: "messages missing address", tool: "sms_message_list", args: `{}`, wantErr: `Missing required parameter "address".`},
		{name: "messages bad since", tool: "sms_message_list", args: `{"address":"x","since":"yesterday"}`, wantErr: `Parameter "since" must be an ISO-8601 time with offset (2026-10-12T15:00:00+08:00) or a date (2026-10-12).`},
		{name: "messages until before since", tool: "sms_message_list", args: `{"address":"x","since":"2026-10-12","until":"2026-10-11"}`, wantErr: `until must be after since.`},
		{name: "messages oversized address", tool: "sms_message_list", args: `{"address":"` + strings.Repeat("1", 65) + `"}`, wantErr: `Parameter "address" is too long (65 characters; the limit is 64).`},
		// sms_search
		{name: "search", tool: "sms_search", args: `{"query":"LUNCH"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["count"] != 1.0 {
				t.Errorf("%v", r)
			}
		}},
		{name: "search cannot find a masked code", tool: "sms_search", args: `{"query":"482916"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["count"] != 0.0 || r["total"] != 0.0 {
				t.Errorf("a masked code was searchable: %v", r)
			}
		}},
		{name: "search by address", tool: "sms_search", args: `{"query":"bank"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["count"] != 1.0 {
				t.Errorf("%v", r)
			}
		}},
		{name: "search limit", tool: "sms_search", args: `{"query":"o","limit":1}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["count"] != 1.0 || r["total"] != 3.0 {
				t.Errorf("%v", r)
			}
		}},
		{name: "search missing query", tool: "sms_search", args: `{"limit":3}`, wantErr: `Missing required parameter "query".`},
		{name: "search limit range", tool: "sms_search", args: `{"query":"a","limit":0}`, wantErr: `Parameter "limit" must be between 1 and 50.`},
		// sms_send
		{name: "send", tool: "sms_send", args: `{"to":"+86 137 0000 0002","text":"On my way."}`, check: func(t *testing.T, a *App, r map[string]any) {
			if fmt.Sprint(r) != "map[deduplicated:false id:1 parts:1 state:queued submitted:2026-10-12T06:00:00+00:00]" {
				t.Errorf("%v", r)
			}
			ms := sampletest.OK(t, a, "sms_message_list", `{"address":"13700000002"}`)
			if ms["total"] != 1.0 || ms["messages"].([]any)[0].(map[string]any)["type"] != "sent" {
				t.Errorf("the sent text is not in the thread: %v", ms)
			}
		}},
		{name: "send missing to", tool: "sms_send", args: `{"text":"x"}`, wantErr: `Missing required parameter "to".`},
		{name: "send missing text", tool: "sms_send", args: `{"to":"+8613700000002"}`, wantErr: `Missing required parameter "text".`},
		{name: "send two recipients", tool: "sms_send", args: `{"to":"+8613700000002,+8613700000003","text":"x"}`, wantErr: `sms_send takes exactly one recipient; send one message per number.`},
		{name: "send two recipients by space", tool: "sms_send", args: `{"to":"13700000002 13700000003","text":"x"}`, wantErr: `sms_send takes exactly one recipient; send one message per number.`},
		{name: "send not a number", tool: "sms_send", args: `{"to":"mom","text":"x"}`, wantErr: `Parameter "to" must be a phone number such as +8613700000001.`},
		{name: "send text 501", tool: "sms_send", args: `{"to":"+8613700000002","text":"` + strings.Repeat("a", 501) + `"}`, wantErr: `Parameter "text" is too long (501 characters; the limit is 500).`},
		{name: "send text 500 CJK ok but preview", tool: "sms_send", args: `{"to":"+8613700000002","text":"` + strings.Repeat("短", 500) + `"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["parts"] != 8.0 { // 500 UCS-2 units / 67
				t.Errorf("parts %v", r["parts"])
			}
		}},
		{name: "send preview too long", tool: "sms_send", args: `{"to":"+8613700000002","text":"` + strings.Repeat(`\"`, 290) + `"}`,
			wantErr: `The message cannot be shown in full on the consent card: its arguments are 613 characters as JSON and the card shows 600, so the user would not see the whole text. Shorten the text (quotes and backslashes count twice).`},
		{name: "send newline refused", tool: "sms_send", args: `{"to":"+8613700000002","text":"a\nb"}`, wantErr: `Parameter "text" contains a control or invisible character (U+000A); send plain visible text on one line.`},
		{name: "send zero width space refused", tool: "sms_send", args: `{"to":"+8613700000002","text":"a\u200bb"}`, wantErr: `Parameter "text" contains a control or invisible character (U+200B); send plain visible text on one line.`},
		{name: "send bidi override refused", tool: "sms_send", args: `{"to":"+8613700000002","text":"pay \u202e0001"}`, wantErr: `Parameter "text" contains a control or invisible character (U+202E); send plain visible text on one line.`},
		{name: "send hangul filler refused", tool: "sms_send", args: `{"to":"+8613700000002","text":"a\u3164"}`, wantErr: `Parameter "text" contains a control or invisible character (U+3164); send plain visible text on one line.`},
		{name: "send ZWJ allowed", tool: "sms_send", args: `{"to":"+8613700000002","text":"👨\u200d👩\u200d👧"}`},
		{name: "send short number", tool: "sms_send", args: `{"to":"10086","text":"TD"}`,
			wantErr: `Refusing to send to 10086: short and service numbers can subscribe, pay or unsubscribe by text, so they are allowed only when the user turns on allow_short_numbers in the SMS app.`},
		{name: "send service number +86 95", tool: "sms_send", args: `{"to":"+8695588123","text":"x"}`, wantErr: `Refusing to send to +8695588123: short and service numbers can subscribe, pay or unsubscribe by text, so they are allowed only when the user turns on allow_short_numbers in the SMS app.`},
		{name: "send 106 number", tool: "sms_send", args: `{"to":"1069000012345","text":"x"}`, wantErr: `Refusing to send to 1069000012345: short and service numbers can subscribe, pay or unsubscribe by text, so they are allowed only when the user turns on allow_short_numbers in the SMS app.`},
		{name: "send short number allowed by setting", setup: func(t *testing.T, a *App, _ *sampletest.Clock) {
			sampletest.Debug(t, a, "set", "allow_short_numbers", "true")
		},
			tool: "sms_send", args: `{"to":"10086","text":"TD"}`},
		{name: "send US number starting 95 after country code", tool: "sms_send", args: `{"to":"+19545550100","text":"hi"}`},
		{name: "send dedup within 2 minutes", setup: func(t *testing.T, a *App, clk *sampletest.Clock) {
			sampletest.OK(t, a, "sms_send", `{"to":"+8613700000002","text":"same"}`)
			clk.Advance(119 * time.Second)
		}, tool: "sms_send", args: `{"to":"13700000002","text":"same"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["deduplicated"] != true || r["id"] != 1.0 || r["state"] != "delivered" {
				t.Errorf("%v", r)
			}
			if d := sampletest.Debug(t, a, "dump").(*Dump); len(d.Outbox) != 1 {
				t.Errorf("re-sent: outbox %d", len(d.Outbox))
			}
		}},
		{name: "send again after 2 minutes", setup: func(t *testing.T, a *App, clk *sampletest.Clock) {
			sampletest.OK(t, a, "sms_send", `{"to":"+8613700000002","text":"same"}`)
			clk.Advance(2 * time.Minute)
		}, tool: "sms_send", args: `{"to":"+8613700000002","text":"same"}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["deduplicated"] != false || r["id"] != 2.0 {
				t.Errorf("%v", r)
			}
		}},
		{name: "send rate limit", setup: func(t *testing.T, a *App, clk *sampletest.Clock) {
			for i := range 5 {
				sampletest.OK(t, a, "sms_send", fmt.Sprintf(`{"to":"+8613700000002","text":"n%d"}`, i))
				clk.Advance(time.Minute)
			}
		}, tool: "sms_send", args: `{"to":"+8613700000002","text":"n5"}`, wantErr: `Rate limit reached: at most 5 messages per 10 minutes. The next one can be sent at 2026-10-12T06:10:00+00:00.`},
		{name: "send rate limit window slides", setup: func(t *testing.T, a *App, clk *sampletest.Clock) {
			for i := range 5 {
				sampletest.OK(t, a, "sms_send", fmt.Sprintf(`{"to":"+8613700000002","text":"n%d"}`, i))
			}
			clk.Advance(10 * time.Minute)
		}, tool: "sms_send", args: `{"to":"+8613700000002","text":"n5"}`},
		{name: "send rate limit setting", setup: func(t *testing.T, a *App, clk *sampletest.Clock) {
			sampletest.Debug(t, a, "set", "rate_limit", "1")
			sampletest.OK(t, a, "sms_send", `{"to":"+8613700000002","text":"one"}`)
		}, tool: "sms_send", args: `{"to":"+8613700000002","text":"two"}`, wantErr: `Rate limit reached: at most 1 messages per 10 minutes. The next one can be sent at 2026-10-12T06:10:00+00:00.`},
		{name: "send in partial mode", setup: func(t *testing.T, a *App, _ *sampletest.Clock) { sampletest.Debug(t, a, "set", "mode", "partial") },
			tool: "sms_send", args: `{"to":"+8613700000002","text":"x"}`, wantErr: NoSendPermission},
		{name: "read in partial mode works", setup: func(t *testing.T, a *App, _ *sampletest.Clock) { sampletest.Debug(t, a, "set", "mode", "partial") },
			tool: "sms_thread_list", args: `{}`},
		// sms_send_status
		{name: "status advances with the clock", setup: func(t *testing.T, a *App, _ *sampletest.Clock) {
			sampletest.OK(t, a, "sms_send", `{"to":"+8613700000002","text":"`+strings.Repeat("a", 200)+`"}`)
		}, tool: "sms_send_status", args: `{"id":1}`, check: func(t *testing.T, a *App, r map[string]any) {
			if r["state"] != "queued" || r["parts"] != 2.0 || r["sent_parts"] != 0.0 || r["error"] != nil {
				t.Errorf("%v", r)
			}
		}},
		{name: "status unknown id", tool: "sms_send_status", args: `{"id":7}`, wantErr: `No sent message with id 7.`},
		{name: "status missing id", tool: "sms_send_status", args: `{}`, wantErr: `Missing required parameter "id".`},
		{name: "status bad id", tool: "sms_send_status", args: `{"id":"1"}`, wantErr: `Parameter "id" must be an integer.`},
		// sms_compose
		{name: "compose", tool: "sms_compose", args: `{"to":"+8613700000002","text":"Draft text"}`, check: func(t *testing.T, a *App, r map[string]any) {
			d := sampletest.Debug(t, a, "dump").(*Dump)
			if r["sent"] != false || r["draft_id"] != 1.0 || len(d.Drafts) != 1 || len(d.Outbox) != 0 {
				t.Errorf("%v %+v", r, d)
			}
		}},
		{name: "compose empty is fine", tool: "sms_compose", args: `{}`},
		{name: "compose too long", tool: "sms_compose", args: `{"text":"` + strings.Repeat("x", 1001) + `"}`, wantErr: `Parameter "text" is too long (1001 characters; the limit is 1000).`},
		{name: "compose bad type", tool: "sms_compose", args: `{"to":13700000002}`, wantErr: `Parameter "to" must be a string.`},
		{name: "compose works in compose_only", setup: func(t *testing.T, a *App, _ *sampletest.Clock) { sampletest.Debug(t, a, "set", "mode", "compose_only") },
			tool: "sms_compose", args: `{"text":"x"}`},
	}
	for _, mode := range []string{"sms_thread_list", "sms_message_list", "sms_search", "sms_send", "sms_send_status"} {
		args := map[string]string{"sms_thread_list": `{}`, "sms_message_list": `{"address":"BANK"}`, "sms_search": `{"query":"a"}`,
			"sms_send": `{"to":"+8613700000002","text":"x"}`, "sms_send_status": `{"id":1}`}[mode]
		tests = append(tests, struct {
			name    string
			setup   func(t *testing.T, a *App, clk *sampletest.Clock)
			tool    string
			args    string
			wantErr string
			check   func(t *testing.T, a *App, r map[string]any)
		}{name: mode + " in compose_only", setup: func(t *testing.T, a *App, _ *sampletest.Clock) { sampletest.Debug(t, a, "set", "mode", "compose_only") },
			tool: mode, args: args, wantErr: NoPermission})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, clk := newApp(t, time.UTC, nil)
			seedInbox(t, a)
			if tt.setup != nil {
				tt.setup(t, a, clk)
			}
			before := dumpJSON(t, a)
			r, e := sampletest.Try(t, a, tt.tool, tt.args)
			if e != tt.wantErr {
				t.Fatalf("error %q, want %q", e, tt.wantErr)
			}
			if e != "" {
				if dumpJSON(t, a) != before {
					t.Error("a failed call changed the store")
				}
				return
			}
			if tt.check != nil {
				tt.check(t, a, r)
			}
		})
	}
}

func TestSendStatusTimeline(t *testing.T) {
	t.Parallel()
	a, clk := newApp(t, sampletest.Location(t, "Asia/Shanghai"), nil)
	r := sampletest.OK(t, a, "sms_send", `{"to":"+8613700000002","text":"`+strings.Repeat("a", 200)+`"}`)
	if r["submitted"] != "2026-10-12T14:00:00+08:00" {
		t.Errorf("submitted %v", r["submitted"])
	}
	steps := []struct {
		after                  time.Duration
		state                  string
		sent, delivered, parts float64
	}{
		{0, "queued", 0, 0, 2},
		{2 * time.Second, "queued", 1, 0, 2},
		{4 * time.Second, "sent", 2, 0, 2},
		{5 * time.Second, "sent", 2, 1, 2},
		{7 * time.Second, "delivered", 2, 2, 2},
		{time.Hour, "delivered", 2, 2, 2},
	}
	var at time.Duration
	for _, s := range steps {
		clk.Advance(s.after - at)
		at = s.after
		st := sampletest.OK(t, a, "sms_send_status", `{"id":1}`)
		if st["state"] != s.state || st["sent_parts"] != s.sent || st["delivered_parts"] != s.delivered || st["parts"] != s.parts {
			t.Errorf("after %v: %v", s.after, st)
		}
	}
}

func TestMaskCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		masked   bool
	}{
		{"您的验证码是 482916，5分钟内有效。", "您的验证码是 ••••••，5分钟内有效。", true},
		{"验证码：1234", "验证码：••••••", true},
		{"Your verification code is 12345678.", "Your verification code is ••••••.", true},
		{"123456 is your Google code", "•••••• is your Google code", true},
		{"Use OTP 9911 to log in", "Use OTP •••••• to log in", true},
		{"PIN: 0000", "PIN: ••••••", true},
		{"code 123", "code 123", false},                                                               // 3 digits
		{"code 123456789", "code 123456789", false},                                                   // 9 digits
		{"Call 13700000001 about the code", "Call 13700000001 about the code", false},                 // phone number, 11 digits
		{"Meeting at 1530 in room 4", "Meeting at 1530 in room 4", false},                             // no keyword
		{"spinach 1234", "spinach 1234", false},                                                       // "pin" inside a word
		{"code" + strings.Repeat(" ", 31) + "1234", "code" + strings.Repeat(" ", 31) + "1234", false}, // too far
		{"code" + strings.Repeat(" ", 30) + "1234", "code" + strings.Repeat(" ", 30) + "••••••", true},
		{"取件码 5-2-1003，验证码 6688", "取件码 5-2-••••••，验证码 ••••••", true}, // a 4-digit run near any code keyword
		{"动态密码 654321 和 112233", "动态密码 •••••• 和 ••••••", true},
	}
	for _, tt := range tests {
		got, masked := MaskCodes(tt.in)
		if got != tt.want || masked != tt.masked {
			t.Errorf("MaskCodes(%q) = %q, %v; want %q, %v", tt.in, got, masked, tt.want, tt.masked)
		}
	}
}

func TestParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want int
	}{
		{"", 1}, {strings.Repeat("a", 160), 1}, {strings.Repeat("a", 161), 2}, {strings.Repeat("a", 306), 2}, {strings.Repeat("a", 307), 3},
		{strings.Repeat("€", 80), 1}, {strings.Repeat("€", 81), 2}, // extension chars take two septets
		{strings.Repeat("短", 70), 1}, {strings.Repeat("短", 71), 2}, {strings.Repeat("短", 134), 2}, {strings.Repeat("短", 135), 3},
		{strings.Repeat("😀", 35), 1}, {strings.Repeat("😀", 36), 2}, // astral: two UTF-16 units
	}
	for _, tt := range tests {
		if got := Parts(tt.text); got != tt.want {
			t.Errorf("Parts(%d×%q) = %d, want %d", len([]rune(tt.text)), firstRune(tt.text), got, tt.want)
		}
	}
}

func firstRune(s string) string {
	for _, r := range s {
		return string(r)
	}
	return ""
}

func TestShortOrService(t *testing.T) {
	t.Parallel()
	for number, want := range map[string]bool{
		"10086": true, "+8610086": true, "95588": true, "+8695588": true, "9611111": true, "1069000012345": true, "106575": true,
		"008610086": true, "12345": true, "+123456": true,
		"13700000001": false, "+8613700000001": false, "+19545550100": false, "02012345678": false, "+442071234567": false,
	} {
		if got := ShortOrService(number); got != want {
			t.Errorf("ShortOrService(%q) = %v, want %v", number, got, want)
		}
	}
}

func TestThreadKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"+8613700000001": "3700000001", "13700000001": "3700000001", "137-0000-0001": "3700000001",
		"10086": "10086", "BANK": "bank", " Bank ": "bank", "+1 (202) 555-0123": "2025550123",
	} {
		if got := ThreadKey(in); got != want {
			t.Errorf("ThreadKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadResultsStayBounded(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	for i := range 100 {
		sampletest.Debug(t, a, "inbox", "add", "+8613700000009", fmt.Sprintf("%d %s", i, strings.Repeat("长", 1200)))
	}
	for _, tc := range []struct{ tool, args, list string }{
		{"sms_message_list", `{"address":"+8613700000009","limit":100}`, "messages"},
		{"sms_search", `{"query":"长","limit":50}`, "messages"},
	} {
		r := sampletest.OK(t, a, tc.tool, tc.args)
		s, _ := json.Marshal(r)
		n := len(r[tc.list].([]any))
		if n == 0 || len([]rune(string(s))) > ResultBudget || apptool.WireCost(r) > apptool.MaxWireChars {
			t.Errorf("%s: %d items, %d chars, wire %d", tc.tool, n, len([]rune(string(s))), apptool.WireCost(r))
		}
		if tc.tool == "sms_message_list" && (r["has_more"] != true || r["next_offset"] != float64(n)) {
			t.Errorf("%s: paging %v %v", tc.tool, r["has_more"], r["next_offset"])
		}
	}
}
