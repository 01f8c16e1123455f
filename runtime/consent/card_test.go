package consent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/runtime/catalog"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var created = time.Date(2026, 10, 8, 9, 30, 0, 0, time.UTC)

func notes() *catalog.ToolID {
	return &catalog.ToolID{Plugin: "notes", Server: "notes", Tool: "note_delete"}
}

// TestCardGolden builds one card per caller kind and tool kind and
// compares its JSON with testdata/cards/<name>.json (-update rewrites).
func TestCardGolden(t *testing.T) {
	t.Parallel()
	longPkg := "org.example." + strings.Repeat("verylongpackagename", 12)
	tests := []struct {
		name string
		req  CardRequest
	}{
		{"app_write_plugin", CardRequest{
			RequestID: "req_01", SessionID: "ses_01", TaskID: "tsk_01",
			Caller:   Initiator{Kind: CallerApp, UID: 10123, Package: "org.agentos.sample.notes", Label: "Notes"},
			ToolName: "mcp__notes__notes__note_create", ToolTitle: "Create note",
			Source:    &catalog.ToolID{Plugin: "notes", Server: "notes", Tool: "note_create"},
			Arguments: json.RawMessage("{\"title\": \"Shopping\u202e\u200b list\", \"body\": \"milk\\n\\n\\neggs\"}"),
			Risk:      catalog.RiskWrite, Options: []Choice{AllowOnce, AllowForSession, AlwaysAllow, Deny},
			CreatedAt: created, QueuePosition: 0, QueueSize: 2,
		}},
		{"desktop_high", CardRequest{
			RequestID: "req_02", SessionID: "ses_02", TaskID: "tsk_02",
			Caller:   Initiator{Kind: CallerDesktop, UID: 2000, Label: "desktop"},
			ToolName: "mcp__notes__notes__note_delete", Source: notes(),
			Arguments: json.RawMessage(`{"id":7}`),
			Risk:      catalog.RiskHigh, Options: []Choice{AllowOnce, Deny},
			CreatedAt: created, Timeout: 30 * time.Second,
		}},
		{"self_session_tool", CardRequest{
			RequestID: "req_03", SessionID: "ses_03", TaskID: "tsk_03",
			Caller:        Initiator{Kind: CallerSelf, UID: 10001},
			ToolName:      "ses__docs__search",
			SessionServer: "docs",
			Arguments:     json.RawMessage(`{}`),
			Risk:          catalog.RiskWrite, Options: []Choice{AllowOnce, AllowForSession, Deny},
			CreatedAt: created,
		}},
		{"system_long_names", CardRequest{
			RequestID: "req_04", SessionID: "ses_04", TaskID: "tsk_04",
			Caller:    Initiator{Kind: CallerSystem},
			ToolName:  "mcp__p__s__t",
			ToolTitle: strings.Repeat("标题", 50) + "「x」",
			Source:    &catalog.ToolID{Plugin: strings.Repeat("p", 60), Server: "「s」" + strings.Repeat("s", 60), Tool: "t"},
			Arguments: json.RawMessage(`{"a":"` + strings.Repeat("x", 700) + `"}`),
			Risk:      catalog.RiskWrite, Options: []Choice{AllowOnce, Deny},
			CreatedAt: created,
		}},
		{"app_spoofed_label_long_package", CardRequest{
			RequestID: "req_05", SessionID: "ses_05", TaskID: "tsk_05",
			Caller:   Initiator{Kind: CallerApp, UID: 10200, Package: longPkg, Label: "「AgentOS」\u202e系统\n更新" + strings.Repeat("长", 200)},
			ToolName: "mcp__notes__notes__note_delete", Source: notes(),
			Arguments: json.RawMessage(`{"id":1}`),
			Risk:      catalog.RiskWrite, Options: []Choice{AllowOnce, "BOGUS", Deny},
			CreatedAt: created,
		}},
		{"app_unknown_label", CardRequest{
			RequestID: "req_06", SessionID: "ses_06", TaskID: "tsk_06",
			Caller:   Initiator{Kind: CallerApp, UID: 10300, Package: "com.example.x"},
			ToolName: "mcp__notes__notes__note_delete", Source: notes(),
			Risk: catalog.RiskRead, Options: []Choice{AllowOnce, Deny},
			CreatedAt: created,
		}},
	}
	for _, tt := range tests {
		card := BuildCard(tt.req)
		got, err := json.MarshalIndent(card, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", "cards", tt.name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update to create)", tt.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: card differs from %s:\n%s", tt.name, path, got)
		}
	}
}

// TestCardRules checks the rules the goldens show, one by one.
func TestCardRules(t *testing.T) {
	t.Parallel()
	base := CardRequest{
		Caller:    Initiator{Kind: CallerApp, UID: 10123, Package: "org.agentos.sample.notes", Label: "Notes"},
		ToolName:  "mcp__notes__notes__note_delete",
		Source:    notes(),
		Risk:      catalog.RiskWrite,
		CreatedAt: created,
	}
	with := func(f func(*CardRequest)) Card { r := base; f(&r); return BuildCard(r) }

	if c := BuildCard(base); c.Title != "要允许「note_delete」吗？" || c.ToolDisplayName != "note_delete" {
		t.Errorf("display falls back to the raw tool name: %q", c.Title)
	}
	if c := with(func(r *CardRequest) { r.ToolTitle = "  删除笔记 " }); c.Title != "要允许「删除笔记」吗？" {
		t.Errorf("title %q", c.Title)
	}
	if c := with(func(r *CardRequest) { r.ToolTitle = "\u200b"; r.Source = nil }); c.ToolDisplayName != "mcp__notes__notes__note_delete" {
		t.Errorf("display falls back to the model name: %q", c.ToolDisplayName)
	}
	if c := with(func(r *CardRequest) { r.ToolTitle = strings.Repeat("x", 100) }); utf8.RuneCountInString(c.ToolDisplayName) != 80 || !strings.HasSuffix(c.ToolDisplayName, "…") {
		t.Errorf("display not cut to 80: %q", c.ToolDisplayName)
	}
	if c := BuildCard(base); c.InitiatorLine != "由 Notes 发起（org.agentos.sample.notes）" || c.Caller.PackageName != "org.agentos.sample.notes" {
		t.Errorf("initiator %q", c.InitiatorLine)
	}
	initiators := map[string]string{
		CallerDesktop: "由电脑端发起",
		CallerSelf:    "由 AgentOS 自己发起",
		CallerSystem:  "由 AgentOS 运行时发起",
		"ROBOT":       "由未知调用方发起",
	}
	for kind, want := range initiators {
		c := with(func(r *CardRequest) { r.Caller = Initiator{Kind: kind, Package: "must.not.show"} })
		if c.InitiatorLine != want || c.Caller.PackageName != "" {
			t.Errorf("%s: %q, package %q", kind, c.InitiatorLine, c.Caller.PackageName)
		}
	}
	if c := with(func(r *CardRequest) { r.Caller.Label = "" }); c.InitiatorLine != "由未知应用发起（org.agentos.sample.notes）" {
		t.Errorf("unknown app %q", c.InitiatorLine)
	}
	if c := with(func(r *CardRequest) { r.Caller.Package = "" }); c.InitiatorLine != "由 Notes 发起" {
		t.Errorf("named app %q", c.InitiatorLine)
	}
	if c := BuildCard(base); c.SourceLine != "来自插件「notes」 · 服务器「notes」" || c.Source == nil || *c.Source != *notes() {
		t.Errorf("source line %q", c.SourceLine)
	}
	risks := []struct {
		r        catalog.Risk
		label    string
		severity Severity
	}{
		{catalog.RiskRead, "只读", SeverityNormal},
		{catalog.RiskWrite, "会修改数据", SeverityElevated},
		{catalog.RiskHigh, "高风险", SeverityCritical},
		{0, "高风险", SeverityCritical}, // invalid risk shown as HIGH
	}
	for _, rt := range risks {
		c := with(func(r *CardRequest) { r.Risk = rt.r })
		if c.RiskLabel != rt.label || c.Severity != rt.severity || c.RiskDescription == "" {
			t.Errorf("risk %v: %q %q %q", rt.r, c.RiskLabel, c.Severity, c.RiskDescription)
		}
	}
	if c := with(func(r *CardRequest) { r.Risk = catalog.RiskHigh }); !strings.Contains(c.RiskDescription, "无法撤销") {
		t.Errorf("HIGH description must say it may be irreversible: %q", c.RiskDescription)
	}
	c := with(func(r *CardRequest) { r.Options = []Choice{AllowOnce, AllowForSession, AlwaysAllow, Deny} })
	labels := []string{"允许一次", "本次对话内不再询问", "始终允许这个工具", "拒绝"}
	for i, o := range c.Options {
		if o.Label != labels[i] || o.Destructive {
			t.Errorf("option %d: %+v", i, o)
		}
	}
	h := with(func(r *CardRequest) { r.Risk = catalog.RiskHigh; r.Options = []Choice{AllowOnce, Deny} })
	if !h.Options[0].Destructive || h.Options[1].Destructive {
		t.Errorf("HIGH allow must be marked destructive: %+v", h.Options)
	}
	if c := BuildCard(base); c.TimeoutMillis != 60000 || c.DeadlineMillis-c.CreatedAtMillis != 60000 {
		t.Errorf("default timeout: %d %d", c.TimeoutMillis, c.DeadlineMillis-c.CreatedAtMillis)
	}
}

func TestArgumentsPreview(t *testing.T) {
	t.Parallel()
	quote := func(s string) json.RawMessage { b, _ := json.Marshal(map[string]string{"a": s}); return b }
	// {"a":"…"} has 8 chars of JSON around the value.
	tests := []struct {
		name      string
		args      json.RawMessage
		want      string // "" = only check the flag
		truncated bool
	}{
		{"compacted", json.RawMessage("{ \"a\" : 1,\n \"b\": [1, 2] }"), `{"a":1,"b":[1,2]}`, false},
		{"invalid JSON is shown cleaned", json.RawMessage("{a\u202e"), "{a", false},
		{"empty", nil, "", false},
		{"600 cp fit", quote(strings.Repeat("x", 592)), `{"a":"` + strings.Repeat("x", 592) + `"}`, false},
		{"601 cp cut", quote(strings.Repeat("x", 593)), `{"a":"` + strings.Repeat("x", 593) + "…", true},
		{"2,000 units: first cut only", quote(strings.Repeat("x", 1992)), "", true},
		{"over 2,000 units", quote(strings.Repeat("x", 5000)), "", true},
		{"escaped newlines stay on one line", json.RawMessage(`{"a":"x\ny"}`), `{"a":"x\ny"}`, false},
	}
	for _, tt := range tests {
		got, trunc := ArgumentsPreview(tt.args)
		if trunc != tt.truncated || (tt.want != "" && got != tt.want) {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, got, trunc, tt.want, tt.truncated)
		}
		if utf8.RuneCountInString(got) > MaxArgumentChars {
			t.Errorf("%s: %d cp", tt.name, utf8.RuneCountInString(got))
		}
	}
	// The first cut alone sets the flag even when the cleaned text fits:
	// 1,999 units of spaces (collapsed by Block) and then more.
	spaces := json.RawMessage(strings.Repeat(" ", 1999) + `{"a":1}`)
	if p, trunc := ArgumentsPreview(spaces); p != `{"a":1}` || trunc {
		t.Errorf("compact JSON is cut after compaction: %q %v", p, trunc)
	}
	raw := json.RawMessage("x" + strings.Repeat(" ", 2500) + "y") // not JSON: not compacted
	if p, trunc := ArgumentsPreview(raw); p != "x" || !trunc {
		t.Errorf("first cut: %q %v", p, trunc)
	}
	// A surrogate pair split by the 2,000-unit cut is dropped whole.
	s, cut := takeUTF16(strings.Repeat("x", 1999)+"😀", PreviewChars)
	if !cut || s != strings.Repeat("x", 1999) {
		t.Errorf("takeUTF16 split a pair: %d bytes, %v", len(s), cut)
	}
	s, cut = takeUTF16(strings.Repeat("😀", 1000), PreviewChars)
	if cut || utf8.RuneCountInString(s) != 1000 {
		t.Errorf("1000 emoji are exactly 2000 units: %v", cut)
	}
}
