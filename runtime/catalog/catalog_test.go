package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"default", "read_only", "chat"} {
		got, err := ParseMode(m)
		if err != nil || string(got) != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "Default", "readonly", "read-only", " chat", "SECRET"} {
		_, err := ParseMode(bad)
		if !errors.Is(err, errcode.InvalidParams) {
			t.Errorf("ParseMode(%q) err = %v, want invalid_params", bad, err)
		}
		if bad == "SECRET" && strings.Contains(err.Error(), bad) {
			t.Errorf("ParseMode(%q) echoes the value: %v", bad, err)
		}
	}
	tests := []struct {
		stored string
		want   Mode
	}{{"default", ModeDefault}, {"read_only", ModeReadOnly}, {"chat", ModeChat}, {"", ModeChat}, {"garbage", ModeChat}}
	for _, tt := range tests {
		if got := StoredMode(tt.stored); got != tt.want {
			t.Errorf("StoredMode(%q) = %q, want %q", tt.stored, got, tt.want)
		}
	}
}

func TestNarrows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to Mode
		want     bool
	}{
		{ModeDefault, ModeDefault, true},
		{ModeDefault, ModeReadOnly, true},
		{ModeDefault, ModeChat, true},
		{ModeReadOnly, ModeChat, true},
		{ModeReadOnly, ModeDefault, false},
		{ModeChat, ModeReadOnly, false},
		{ModeChat, ModeDefault, false},
		{ModeDefault, "bogus", false},
	}
	for _, tt := range tests {
		if got := Narrows(tt.from, tt.to); got != tt.want {
			t.Errorf("Narrows(%s, %s) = %v", tt.from, tt.to, got)
		}
	}
}

func TestEffectiveRisk(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	r, w, h := RiskRead, RiskWrite, RiskHigh
	tests := []struct {
		name     string
		declared *Risk
		ann      Annotations
		want     Risk
	}{
		{"third-party default is WRITE", nil, Annotations{}, RiskWrite},
		{"readOnlyHint never lowers", nil, Annotations{ReadOnlyHint: &yes}, RiskWrite},
		{"destructiveHint true raises", nil, Annotations{DestructiveHint: &yes}, RiskHigh},
		{"destructiveHint false is nothing", nil, Annotations{DestructiveHint: &no}, RiskWrite},
		{"declared READ", &r, Annotations{}, RiskRead},
		{"declared READ + readOnly", &r, Annotations{ReadOnlyHint: &yes}, RiskRead},
		{"declared READ + destructive", &r, Annotations{DestructiveHint: &yes}, RiskHigh},
		{"declared WRITE", &w, Annotations{ReadOnlyHint: &yes}, RiskWrite},
		{"declared HIGH never lowered", &h, Annotations{DestructiveHint: &no, ReadOnlyHint: &yes}, RiskHigh},
	}
	for _, tt := range tests {
		if got := EffectiveRisk(tt.declared, tt.ann); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if SessionRisk(Annotations{ReadOnlyHint: &yes}) != RiskWrite || SessionRisk(Annotations{DestructiveHint: &yes}) != RiskHigh {
		t.Error("session risk: at least WRITE, destructive HIGH")
	}
	if !RiskRead.MayAlwaysAllow() || !RiskWrite.MayAlwaysAllow() || RiskHigh.MayAlwaysAllow() || Risk(0).MayAlwaysAllow() {
		t.Error("MayAlwaysAllow")
	}
	if RiskRead.MaySessionRemember() || !RiskWrite.MaySessionRemember() || RiskHigh.MaySessionRemember() {
		t.Error("MaySessionRemember")
	}
	for _, x := range []Risk{RiskRead, RiskWrite, RiskHigh} {
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		var back Risk
		if err := json.Unmarshal(b, &back); err != nil || back != x {
			t.Errorf("risk %v round trip %s → %v %v", x, b, back, err)
		}
	}
	if _, err := json.Marshal(Risk(0)); err == nil {
		t.Error("zero risk marshalled")
	}
	if _, err := ParseRisk("read"); err == nil {
		t.Error("ParseRisk is case-sensitive")
	}
}

// testCatalog: alarm (WRITE), calendar free_slots (READ, declared by a
// trusted source in this test), a disabled tool, a HIGH tool, a builtin
// READ read_skill and one session tool.
func testCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := New([]Entry{
		{Kind: KindPlugin, Source: ToolID{"alarm", "alarm", "alarm_create"}, Risk: RiskWrite, Enabled: true, MayAlwaysAllow: true},
		{Kind: KindPlugin, Source: ToolID{"calendar", "calendar", "free_slots"}, Risk: RiskRead, Enabled: true, MayAlwaysAllow: true},
		{Kind: KindPlugin, Source: ToolID{"notes", "notes", "note_delete"}, Risk: RiskHigh, Enabled: true, MayAlwaysAllow: true},
		{Kind: KindPlugin, Source: ToolID{"todo", "todo", "todo_create"}, Risk: RiskWrite, Enabled: false},
		{Kind: KindBuiltin, Name: "read_skill", Risk: RiskRead, Enabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err = c.WithSession([]Entry{
		{Kind: KindSession, Session: SessionToolID{"docs", "search"}, Risk: RiskWrite, Enabled: true, MayAlwaysAllow: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	return out
}

func TestCatalogVisible(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	const (
		alarm  = "mcp__alarm__alarm__alarm_create"
		free   = "mcp__calendar__calendar__free_slots"
		del    = "mcp__notes__notes__note_delete"
		todo   = "mcp__todo__todo__todo_create"
		skill  = "read_skill"
		search = "ses__docs__search"
	)
	tests := []struct {
		name string
		view View
		want []string
	}{
		{"default, no scope", View{Mode: ModeDefault}, []string{alarm, free, del, skill, search}},
		{"read_only keeps READ only", View{Mode: ModeReadOnly}, []string{free, skill}},
		{"chat keeps nothing", View{Mode: ModeChat}, nil},
		{"unknown mode = chat", View{Mode: "weird"}, nil},
		{"zero view = chat", View{}, nil},
		{
			"scope: plugin tools narrowed, builtin gone, session tools unaffected",
			View{Mode: ModeDefault, Scope: []ScopeEntry{{Plugin: "alarm", Tool: "alarm_create"}, {Plugin: "todo", Tool: "todo_create"}, {Plugin: "ghost", Tool: "x"}}},
			[]string{alarm, search},
		},
		{"empty scope: only session tools", View{Mode: ModeDefault, Scope: []ScopeEntry{}}, []string{search}},
		{
			"scope matches on plugin and raw tool, not the final name",
			View{Mode: ModeDefault, Scope: []ScopeEntry{{Plugin: "alarm", Tool: alarm}, {Plugin: "calendar", Tool: "free_slots"}}},
			[]string{free, search},
		},
		{
			"read_only with scope",
			View{Mode: ModeReadOnly, Scope: []ScopeEntry{{Plugin: "alarm", Tool: "alarm_create"}, {Plugin: "calendar", Tool: "free_slots"}}},
			[]string{free},
		},
	}
	for _, tt := range tests {
		got := names(c.Visible(tt.view))
		if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("%s: Visible = %q, want %q", tt.name, got, tt.want)
		}
		// Lookup agrees with Visible for every name in the catalog, and
		// answers "not available" identically otherwise.
		for _, e := range c.All() {
			_, err := c.Lookup(e.Name, tt.view)
			if slices.Contains(tt.want, e.Name) {
				if err != nil {
					t.Errorf("%s: Lookup(%s) = %v", tt.name, e.Name, err)
				}
				continue
			}
			checkNotAvailable(t, err, e.Name)
		}
	}
	_, err := c.Lookup("mcp__ghost__x__y", View{Mode: ModeDefault})
	checkNotAvailable(t, err, "mcp__ghost__x__y")
}

func checkNotAvailable(t *testing.T, err error, name string) {
	t.Helper()
	var e *errcode.Error
	if !errors.As(err, &e) || e.Code != errcode.ToolNotInCatalog {
		t.Fatalf("Lookup(%s): %v, want tool_not_in_catalog", name, err)
	}
	want := "[agentos:tool_not_in_catalog] Tool " + name + " is not available."
	if got := errcode.ToolText(e.Code, e.Text); got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

func TestNotAvailableBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 200)
	e := NotAvailable(long)
	if len(e.Text) > 200 || !strings.HasSuffix(e.Text, "… is not available.") || !strings.HasPrefix(e.Text, "Tool éé") {
		t.Errorf("long name text %q", e.Text)
	}
}

func TestCatalogNew(t *testing.T) {
	t.Parallel()
	c, err := New([]Entry{
		{Kind: KindPlugin, Source: ToolID{"a.b", "s", "t"}, Risk: RiskHigh, Enabled: true, MayAlwaysAllow: true, Name: "ignored"},
		{Kind: KindPlugin, Source: ToolID{"a_b", "s", "t"}, Risk: RiskWrite, Enabled: true, MayAlwaysAllow: true},
		{Kind: KindSession, Session: SessionToolID{"s", "t"}, Risk: RiskWrite, Enabled: true, MayAlwaysAllow: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := names(c.All())
	want := []string{"mcp__a_b__s__t_0b737e", "mcp__a_b__s__t_74a108", "ses__s__t"}
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	e, _ := c.ByName("mcp__a_b__s__t_0b737e")
	if e.MayAlwaysAllow || e.Provider() != "a.b" {
		t.Errorf("HIGH entry %+v may be always-allowed", e)
	}
	s, _ := c.ByName("ses__s__t")
	if s.MayAlwaysAllow || s.Provider() != "session:s" {
		t.Errorf("session entry %+v", s)
	}
	// WithSession replaces session tools and keeps plugin names.
	c2, err := c.WithSession(nil)
	if err != nil || c2.Len() != 2 || c.Len() != 3 {
		t.Fatalf("WithSession(nil): %v, %d entries (original %d)", err, c2.Len(), c.Len())
	}
	bad := []struct {
		name    string
		entries []Entry
		want    error
	}{
		{"builtin in mcp__ namespace", []Entry{{Kind: KindBuiltin, Name: "mcp__x", Risk: RiskRead}}, ErrBadEntry},
		{"builtin in ses__ namespace", []Entry{{Kind: KindBuiltin, Name: "ses__x", Risk: RiskRead}}, ErrBadEntry},
		{"builtin bad name", []Entry{{Kind: KindBuiltin, Name: "read skill", Risk: RiskRead}}, ErrBadEntry},
		{"builtin twice", []Entry{{Kind: KindBuiltin, Name: "read_skill", Risk: RiskRead}, {Kind: KindBuiltin, Name: "read_skill", Risk: RiskRead}}, ErrBadEntry},
		{"zero risk", []Entry{{Kind: KindPlugin, Source: ToolID{"p", "s", "t"}}}, ErrBadEntry},
		{"zero kind", []Entry{{Risk: RiskRead}}, ErrBadEntry},
		{"duplicate tool", []Entry{{Kind: KindPlugin, Source: ToolID{"p", "s", "t"}, Risk: RiskRead}, {Kind: KindPlugin, Source: ToolID{"p", "s", "t"}, Risk: RiskRead}}, ErrDuplicateTool},
	}
	for _, tt := range bad {
		if _, err := New(tt.entries); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := c.WithSession([]Entry{{Kind: KindPlugin, Source: ToolID{"p", "s", "t"}, Risk: RiskRead}}); !errors.Is(err, ErrBadEntry) {
		t.Errorf("WithSession(plugin entry): %v", err)
	}
}

func TestEntryJSON(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	e, _ := c.ByName("mcp__alarm__alarm__alarm_create")
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Entry
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != KindPlugin || back.Risk != RiskWrite || back.Source != e.Source || back.Name != e.Name {
		t.Errorf("round trip %s → %+v", b, back)
	}
	if !strings.Contains(string(b), `"kind":"plugin"`) || !strings.Contains(string(b), `"risk":"WRITE"`) {
		t.Errorf("json %s", b)
	}
}

func TestSkillsAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    View
		want bool
	}{
		{View{Mode: ModeDefault}, true},
		{View{Mode: ModeReadOnly}, true},
		{View{Mode: ModeChat}, false},
		{View{Mode: "?"}, false},
		{View{Mode: ModeDefault, Scope: []ScopeEntry{}}, false},
		{View{Mode: ModeDefault, Scope: []ScopeEntry{{Plugin: "p", Tool: "t"}}}, false},
	}
	for _, tt := range tests {
		if got := tt.v.SkillsAllowed(); got != tt.want {
			t.Errorf("%+v.SkillsAllowed() = %v", tt.v, got)
		}
	}
}

func bigCatalog(n int) []Entry {
	out := make([]Entry, 0, n)
	for i := range n {
		// 50 plugins with 10 tools each; every 25th pair collides
		// ("p.N" vs "p_N") so the collision rounds are exercised.
		plugin := fmt.Sprintf("plugin.%d", i/10)
		if i%25 == 0 {
			plugin = fmt.Sprintf("plugin_%d", i/10)
		}
		out = append(out, Entry{
			Kind:        KindPlugin,
			Source:      ToolID{plugin, "server", fmt.Sprintf("tool_%d", i%10)},
			Description: "a tool",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Risk:        RiskWrite,
			Enabled:     true,
		})
	}
	return out
}

// BenchmarkCatalogBuild500 is Assign + New for a 500-tool catalog (the
// target is under 10 ms per build). Besides wall time it reports the
// process CPU time per build, which other load on the machine does not
// inflate.
func BenchmarkCatalogBuild500(b *testing.B) {
	es := bigCatalog(500)
	b.ReportAllocs()
	start, cpu0 := time.Now(), cpuTime(b)
	for b.Loop() {
		if _, err := New(es); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/n, "ms/build")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/n, "cpu-ms/build")
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAssign500 is Assign alone over 500 ids.
func BenchmarkAssign500(b *testing.B) {
	es := bigCatalog(500)
	ids := make([]ToolID, len(es))
	for i, e := range es {
		ids[i] = e.Source
	}
	for b.Loop() {
		if _, err := Assign(ids); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVisible500 is one turn's tool list for a scoped session.
func BenchmarkVisible500(b *testing.B) {
	c, err := New(bigCatalog(500))
	if err != nil {
		b.Fatal(err)
	}
	v := View{Mode: ModeDefault, Scope: []ScopeEntry{{Plugin: "plugin.3", Tool: "tool_1"}, {Plugin: "plugin.7", Tool: "tool_2"}}}
	for b.Loop() {
		if len(c.Visible(v)) != 2 {
			b.Fatal("wrong count")
		}
	}
}
