package manifest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// golden compares v's indented JSON with testdata/<name> (-update rewrites).
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n%s", path, got)
	}
}

func TestParsePluginFull(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/plugin_full.json")
	if err != nil {
		t.Fatal(err)
	}
	p, ps := ParsePlugin(data)
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	golden(t, "plugin_full.golden.json", p)
	if p.DisplayName() != "Notes" || p.Interface.Icon != "./assets/icon.png" || !p.Hooks.Declared {
		t.Errorf("plugin %+v", p)
	}
	if len(p.Servers) != 2 || p.Servers[0] != (AppServer{"archive", "notes-archive"}) {
		t.Errorf("servers %v", p.Servers)
	}
	if len(p.Unsupported) != 1 || p.Unsupported[0].Reason != UnsafePath {
		t.Errorf("unsupported %v", p.Unsupported)
	}
	// The same manifest imported as a zip may not declare app servers.
	_, ips := ParseImportedPlugin(data)
	if len(ips) != 1 || ips[0].Code != BinderNotAllowed {
		t.Errorf("imported: %v", ips)
	}
	if SocketName("org.agentos.sample.notes", "notes") != "@agentos-app.org.agentos.sample.notes.notes" {
		t.Error("socket name")
	}
}

const minimal = `"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":"p"`

func TestParsePluginProblems(t *testing.T) {
	t.Parallel()
	type pc struct {
		code Code
		path string
	}
	tests := []struct {
		name string
		json string
		want []pc
	}{
		{"minimal", `{` + minimal + `}`, nil},
		{"not JSON", `{"name":`, []pc{{NotJSON, ""}}},
		{"trailing garbage", `{` + minimal + `} x`, []pc{{NotJSON, ""}}},
		{"not an object", `["p"]`, []pc{{Schema, ""}}},
		{"unknown key", `{` + minimal + `,"main":"x"}`, []pc{{Schema, "main"}}},
		{"schema missing", `{"name":"p"}`, []pc{{Schema, "$schema"}}},
		{"schema wrong", `{"$schema":"https://agent-plugins.org/schemas/1.0.1/plugin.schema.json","name":"p"}`, []pc{{Schema, "$schema"}}},
		{"schema not a string", `{"$schema":1,"name":"p"}`, []pc{{Schema, "$schema"}}},
		{"name missing", `{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"}`, []pc{{Schema, "name"}}},
		{"name not a string", `{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":7}`, []pc{{Schema, "name"}}},
		{"name bad", `{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":"Notes"}`, []pc{{Schema, "name"}}},
		{"version not a string", `{` + minimal + `,"version":1}`, []pc{{Schema, "version"}}},
		{"license not a string", `{` + minimal + `,"license":null}`, []pc{{Schema, "license"}}},
		{"author not an object", `{` + minimal + `,"author":"me"}`, []pc{{Schema, "author"}}},
		{"author extra key", `{` + minimal + `,"author":{"name":"a","twitter":"b"}}`, []pc{{Schema, "author/twitter"}}},
		{"author value not a string", `{` + minimal + `,"author":{"email":1}}`, []pc{{Schema, "author/email"}}},
		{"keywords not an array", `{` + minimal + `,"keywords":"a"}`, []pc{{Schema, "keywords"}}},
		{"keyword not a string", `{` + minimal + `,"keywords":["a",1]}`, []pc{{Schema, "keywords/1"}}},
		{"extensions not an object", `{` + minimal + `,"extensions":[]}`, []pc{{Schema, "extensions"}}},
		{"partition not an object", `{` + minimal + `,"extensions":{"com.example":1}}`, []pc{{Schema, "extensions/com.example"}}},
		{"org.agentos not an object", `{` + minimal + `,"extensions":{"org.agentos":[]}}`, []pc{{Schema, "extensions/org.agentos"}}},
		{"mcpServers not an object", `{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":[]}}}`, []pc{{OrgAgentOS, "extensions/org.agentos/mcpServers"}}},
		{"server not an object", `{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"s":"svc"}}}}`, []pc{{OrgAgentOS, "extensions/org.agentos/mcpServers/s"}}},
		{"server name empty", `{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"":{"service":"x"}}}}}`, []pc{{OrgAgentOS, `extensions/org.agentos/mcpServers/""`}}},
		{"service missing", `{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"s":{}}}}}`, []pc{{OrgAgentOS, "extensions/org.agentos/mcpServers/s/service"}}},
		{"service empty", `{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"s":{"service":""}}}}}`, []pc{{OrgAgentOS, "extensions/org.agentos/mcpServers/s/service"}}},
		{"service whitespace", `{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"s":{"service":"a b"}}}}}`, []pc{{OrgAgentOS, "extensions/org.agentos/mcpServers/s/service"}}},
		{"service not a string", `{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"s":{"service":1}}}}}`, []pc{{OrgAgentOS, "extensions/org.agentos/mcpServers/s/service"}}},
		{"duplicate key", `{` + minimal + `,"name":"q"}`, []pc{{Schema, "name"}}},
		{"nested duplicate key", `{` + minimal + `,"author":{"name":"a","name":"b"}}`, []pc{{Schema, "author/name"}}},
		{
			"all problems in one pass",
			`{"$schema":"x","name":"-bad-","version":2,"author":{"x":1},"keywords":[1],"extensions":{"org.agentos":{"mcpServers":{"s":{"service":" "}}}},"extra":1}`,
			[]pc{{Schema, "extra"}, {Schema, "$schema"}, {Schema, "name"}, {Schema, "version"}, {Schema, "author/x"}, {Schema, "keywords/0"}, {OrgAgentOS, "extensions/org.agentos/mcpServers/s/service"}},
		},
		{"com.openai wrong types are ignored", `{` + minimal + `,"extensions":{"com.openai":{"interface":{"displayName":1},"hooks":7}}}`, nil},
	}
	for _, tt := range tests {
		_, ps := ParsePlugin([]byte(tt.json))
		var got []pc
		for _, p := range ps {
			got = append(got, pc{p.Code, p.Path})
			if p.Message == "" {
				t.Errorf("%s: problem without message", tt.name)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: problems %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPluginNameRule(t *testing.T) {
	t.Parallel()
	good := []string{"a", "9", "notes", "com.example.notes", "a-b", "a.b-c.d", strings.Repeat("a", 64), "a1.2b"}
	bad := []string{"", "A", "notes!", "-a", "a-", ".a", "a.", "a--b", "a..b", strings.Repeat("a", 65), "a_b", "a b", "笔记"}
	for _, s := range good {
		if !ValidName(s) {
			t.Errorf("ValidName(%q) = false", s)
		}
	}
	for _, s := range bad {
		if ValidName(s) {
			t.Errorf("ValidName(%q) = true", s)
		}
	}
	// "a.-b" has neither "--" nor ".." and starts/ends alphanumeric: the
	// spec's regex accepts it.
	if !ValidName("a.-b") {
		t.Error(`ValidName("a.-b") = false; the spec regex allows it`)
	}
}

func TestComOpenAI(t *testing.T) {
	t.Parallel()
	doc := func(partition string) []byte {
		return []byte(`{` + minimal + `,"extensions":{"com.openai":` + partition + `}}`)
	}
	tests := []struct {
		name        string
		partition   string
		display     string
		icon        string
		hooks       Hooks
		unsupported []string
	}{
		{"no interface", `{}`, "p", "", Hooks{}, nil},
		{"displayName", `{"interface":{"displayName":"My Notes"}}`, "My Notes", "", Hooks{}, nil},
		{"blank displayName falls back", `{"interface":{"displayName":"  "}}`, "p", "", Hooks{}, nil},
		{"logo when no composerIcon", `{"interface":{"logo":"./l.png"}}`, "p", "./l.png", Hooks{}, nil},
		{"icon outside", `{"interface":{"composerIcon":"../x.png"}}`, "p", "", Hooks{}, []string{"extensions/com.openai/interface/composerIcon"}},
		{"icon absolute", `{"interface":{"logo":"/etc/x"}}`, "p", "", Hooks{}, []string{"extensions/com.openai/interface/logo"}},
		{"icon backslash", `{"interface":{"logo":".\\x.png"}}`, "p", "", Hooks{}, []string{"extensions/com.openai/interface/logo"}},
		{"hooks path", `{"hooks":"./h.json"}`, "p", "", Hooks{Declared: true, Paths: []string{"./h.json"}}, nil},
		{"hooks bad path still declared", `{"hooks":"h.json"}`, "p", "", Hooks{Declared: true}, []string{"extensions/com.openai/hooks"}},
		{"hooks dotdot inside", `{"hooks":["./a/../../h.json"]}`, "p", "", Hooks{Declared: true}, []string{"extensions/com.openai/hooks/0"}},
		{"hooks inline", `{"hooks":{"hooks":{}}}`, "p", "", Hooks{Declared: true, Inline: []json.RawMessage{json.RawMessage(`{"hooks":{}}`)}}, nil},
	}
	for _, tt := range tests {
		p, ps := ParsePlugin(doc(tt.partition))
		if len(ps) != 0 {
			t.Fatalf("%s: %v", tt.name, ps)
		}
		var un []string
		for _, u := range p.Unsupported {
			un = append(un, u.Path)
		}
		if p.DisplayName() != tt.display || p.Interface.Icon != tt.icon || !slices.Equal(un, tt.unsupported) ||
			p.Hooks.Declared != tt.hooks.Declared || !slices.Equal(p.Hooks.Paths, tt.hooks.Paths) || len(p.Hooks.Inline) != len(tt.hooks.Inline) {
			t.Errorf("%s: display %q icon %q hooks %+v unsupported %v", tt.name, p.DisplayName(), p.Interface.Icon, p.Hooks, un)
		}
	}
}

func TestSafePath(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"./a.png": true, "./a/b/c.json": true, "./..a": true, "./a..": true,
		"": false, "./": false, "a.png": false, "/a": false, "../a": false, "./../a": false, "./a/../../b": false,
		"./a\\b": false, "./a\x00": false, ".//a": true,
	} {
		if got := SafePath(s); got != want {
			t.Errorf("SafePath(%q) = %v", s, got)
		}
	}
}

func TestParseMCP(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/mcp_full.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, ps := ParseMCP(data)
	if len(ps) != 0 {
		t.Fatalf("problems %v", ps)
	}
	golden(t, "mcp_full.golden.json", cfg)
	want := map[string]string{"creds": InsecureURL, "docs": "", "events": SSEServer, "local": StdioServer, "plain": InsecureURL}
	for _, s := range cfg.Servers {
		if s.Unsupported != want[s.Name] || s.Usable() != (want[s.Name] == "") {
			t.Errorf("%s: unsupported %q", s.Name, s.Unsupported)
		}
	}
	if strings.Contains(string(mustJSON(t, cfg)), "entered by the user") {
		t.Error("header values must not be kept")
	}

	type pc struct {
		code Code
		path string
	}
	tests := []struct {
		name string
		json string
		want []pc
	}{
		{"minimal", `{"mcpServers":{}}`, nil},
		{"schema ok", `{"$schema":"https://agent-plugins.org/schemas/1.0.0/mcp.schema.json","mcpServers":{}}`, nil},
		{"schema wrong", `{"$schema":"x","mcpServers":{}}`, []pc{{Schema, "$schema"}}},
		{"not JSON", `{`, []pc{{NotJSON, ""}}},
		{"not an object", `[]`, []pc{{Schema, ""}}},
		{"mcpServers missing", `{}`, []pc{{Schema, "mcpServers"}}},
		{"mcpServers not an object", `{"mcpServers":[]}`, []pc{{Schema, "mcpServers"}}},
		{"unknown top key", `{"mcpServers":{},"servers":{}}`, []pc{{Schema, "servers"}}},
		{"server not an object", `{"mcpServers":{"s":1}}`, []pc{{Schema, "mcpServers/s"}}},
		{"type missing", `{"mcpServers":{"s":{"url":"https://x.example"}}}`, []pc{{Schema, "mcpServers/s/type"}}},
		{"type unknown", `{"mcpServers":{"s":{"type":"http","url":"https://x.example"}}}`, []pc{{Schema, "mcpServers/s/type"}}},
		{"http url missing", `{"mcpServers":{"s":{"type":"streamable-http"}}}`, []pc{{Schema, "mcpServers/s/url"}}},
		{"http url empty", `{"mcpServers":{"s":{"type":"sse","url":""}}}`, []pc{{Schema, "mcpServers/s/url"}}},
		{"http extra key", `{"mcpServers":{"s":{"type":"streamable-http","url":"https://x.example","command":"x"}}}`, []pc{{Schema, "mcpServers/s/command"}}},
		{"headers not strings", `{"mcpServers":{"s":{"type":"streamable-http","url":"https://x.example","headers":{"a":1}}}}`, []pc{{Schema, "mcpServers/s/headers"}}},
		{"stdio command missing", `{"mcpServers":{"s":{"type":"stdio"}}}`, []pc{{Schema, "mcpServers/s/command"}}},
		{"stdio args not strings", `{"mcpServers":{"s":{"type":"stdio","command":"x","args":[1]}}}`, []pc{{Schema, "mcpServers/s/args"}}},
		{"stdio env reserved", `{"mcpServers":{"s":{"type":"stdio","command":"x","env":{"PLUGIN_DATA":"/x"}}}}`, []pc{{Schema, "mcpServers/s/env/PLUGIN_DATA"}}},
		{"stdio cwd", `{"mcpServers":{"s":{"type":"stdio","command":"x","cwd":"/plugin"}}}`, []pc{{Schema, "mcpServers/s/cwd"}}},
		{"stdio cwd data", `{"mcpServers":{"s":{"type":"stdio","command":"x","cwd":"${PLUGIN_DATA}/w"}}}`, nil},
		{"stdio extra key", `{"mcpServers":{"s":{"type":"stdio","command":"x","url":"u"}}}`, []pc{{Schema, "mcpServers/s/url"}}},
		{"duplicate server key", `{"mcpServers":{"s":{"type":"sse","url":"https://a.example"},"s":{"type":"sse","url":"https://b.example"}}}`, []pc{{Schema, "mcpServers/s"}}},
	}
	for _, tt := range tests {
		_, ps := ParseMCP([]byte(tt.json))
		var got []pc
		for _, p := range ps {
			got = append(got, pc{p.Code, p.Path})
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: problems %v, want %v", tt.name, got, tt.want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTooLargeIsMissing(t *testing.T) {
	t.Parallel()
	big := []byte(`{` + minimal + `,"description":"` + strings.Repeat("x", MaxJSONBytes) + `"}`)
	if p, ps := ParsePlugin(big); p != nil || ps != nil {
		t.Errorf("over the limit must be missing: %v %v", p, ps)
	}
	if c, ps := ParseMCP(append([]byte(`{"mcpServers":{}}`), bytes.Repeat([]byte(" "), MaxJSONBytes)...)); c != nil || ps != nil {
		t.Errorf("mcp.json over the limit must be missing: %v %v", c, ps)
	}
	exact := []byte(`{` + minimal + `}`)
	exact = append(exact, bytes.Repeat([]byte(" "), MaxJSONBytes-len(exact))...)
	if p, ps := ParsePlugin(exact); p == nil || ps != nil {
		t.Errorf("exactly at the limit must be read: %v", ps)
	}
}

func TestCheckServers(t *testing.T) {
	t.Parallel()
	p, _ := ParsePlugin([]byte(`{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"docs":{"service":"s"},"notes":{"service":"n"}}}}}`))
	m, _ := ParseMCP([]byte(`{"mcpServers":{"docs":{"type":"sse","url":"https://x.example"},"Notes":{"type":"stdio","command":"x"}}}`))
	ps := CheckServers(p, m)
	if len(ps) != 1 || ps[0].Code != DuplicateServer || ps[0].Path != "mcpServers/docs" {
		t.Errorf("CheckServers = %v", ps)
	}
	if CheckServers(p, nil) != nil || CheckServers(nil, m) != nil {
		t.Error("nil halves")
	}
}

func TestResolveNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		claims    []Claim
		previous  map[string]string
		owner     map[string]string
		conflicts []string
	}{
		{
			"smaller id wins",
			[]Claim{{ID: "org.b/agent-plugin", Name: "notes"}, {ID: "org.a/agent-plugin", Name: "notes"}},
			nil,
			map[string]string{"notes": "org.a/agent-plugin"}, []string{"org.b/agent-plugin"},
		},
		{
			"previous owner beats smaller id",
			[]Claim{{ID: "org.a/agent-plugin", Name: "notes"}, {ID: "org.b/agent-plugin", Name: "notes"}},
			map[string]string{"notes": "org.b/agent-plugin"},
			map[string]string{"notes": "org.b/agent-plugin"}, []string{"org.a/agent-plugin"},
		},
		{
			"built-in beats previous owner",
			[]Claim{{ID: "org.b/agent-plugin", Name: "notes"}, {ID: "org.z/builtin", Name: "notes", Builtin: true}},
			map[string]string{"notes": "org.b/agent-plugin"},
			map[string]string{"notes": "org.z/builtin"}, []string{"org.b/agent-plugin"},
		},
		{
			"user. is reserved for non-built-ins",
			[]Claim{{ID: "org.a/p", Name: "user.docs"}, {ID: "org.b/p", Name: "alarm"}},
			nil,
			map[string]string{"alarm": "org.b/p"}, []string{"org.a/p"},
		},
		{
			"a built-in may use user.",
			[]Claim{{ID: "agentos/u", Name: "user.docs", Builtin: true}},
			nil,
			map[string]string{"user.docs": "agentos/u"}, nil,
		},
		{
			"previous owner that is gone does not matter",
			[]Claim{{ID: "org.c/p", Name: "n"}, {ID: "org.b/p", Name: "n"}},
			map[string]string{"n": "org.gone/p"},
			map[string]string{"n": "org.b/p"}, []string{"org.c/p"},
		},
		{
			"three-way, all losers listed",
			[]Claim{{ID: "c", Name: "n"}, {ID: "a", Name: "n"}, {ID: "b", Name: "n"}, {ID: "d", Name: "m"}},
			nil,
			map[string]string{"n": "a", "m": "d"}, []string{"b", "c"},
		},
		{
			"repeated id ignored",
			[]Claim{{ID: "a", Name: "n"}, {ID: "a", Name: "other"}},
			nil,
			map[string]string{"n": "a"}, nil,
		},
	}
	for _, tt := range tests {
		got := ResolveNames(tt.claims, tt.previous)
		if fmt.Sprint(got.Owner) != fmt.Sprint(tt.owner) || !slices.Equal(got.Conflicts, tt.conflicts) {
			t.Errorf("%s: %v %v, want %v %v", tt.name, got.Owner, got.Conflicts, tt.owner, tt.conflicts)
		}
		// Order of claims does not matter.
		rev := slices.Clone(tt.claims)
		slices.Reverse(rev)
		if tt.name != "repeated id ignored" {
			if again := ResolveNames(rev, tt.previous); fmt.Sprint(again) != fmt.Sprint(got) {
				t.Errorf("%s: order changed the result: %v vs %v", tt.name, again, got)
			}
		}
	}
}

// FuzzParsePlugin: never panics; problems carry known codes and
// messages; an accepted manifest has a valid name, safe icon and hook
// paths, and servers with non-empty names and services.
func FuzzParsePlugin(f *testing.F) {
	full, err := os.ReadFile("testdata/plugin_full.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(full), `{` + minimal + `}`, `{"name":"p"}`, `{` + minimal + `,"name":"q"}`, `[]`, `{`, `null`,
		`{` + minimal + `,"extensions":{"org.agentos":{"mcpServers":{"":{"service":""}}}}}`,
		`{` + minimal + `,"extensions":{"com.openai":{"hooks":["./a","../b",{}],"interface":{"logo":"./\u0000"}}}}`,
	} {
		f.Add([]byte(s))
	}
	known := map[Code]bool{NotJSON: true, Schema: true, OrgAgentOS: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ps := ParsePlugin(data)
		for _, pr := range ps {
			if !known[pr.Code] || pr.Message == "" {
				t.Fatalf("bad problem %+v", pr)
			}
		}
		if len(ps) > 0 {
			return
		}
		if p == nil || !ValidName(p.Name) {
			t.Fatalf("accepted plugin %+v", p)
		}
		if p.Interface.Icon != "" && !SafePath(p.Interface.Icon) {
			t.Fatalf("unsafe icon %q", p.Interface.Icon)
		}
		for _, h := range p.Hooks.Paths {
			if !SafePath(h) {
				t.Fatalf("unsafe hook path %q", h)
			}
		}
		for i, s := range p.Servers {
			if s.Name == "" || s.Service == "" || strings.ContainsAny(s.Service, " \t\n\r") {
				t.Fatalf("server %+v", s)
			}
			if i > 0 && p.Servers[i-1].Name > s.Name {
				t.Fatal("servers not sorted")
			}
		}
	})
}

// TestDeepNesting: nesting beyond MaxDepth is a problem, found in one
// linear pass (a 256 KiB file of brackets must not stall discovery).
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	ok := `{` + minimal + `,"extensions":{"com.example":` + strings.Repeat(`{"a":`, MaxDepth-2) + "1" + strings.Repeat("}", MaxDepth-2) + `}}`
	if _, ps := ParsePlugin([]byte(ok)); len(ps) != 0 {
		t.Errorf("%d levels: %v", MaxDepth, ps)
	}
	deep := `{` + minimal + `,"extensions":{"com.example":` + strings.Repeat(`{"a":`, MaxDepth-1) + "1" + strings.Repeat("}", MaxDepth-1) + `}}`
	_, ps := ParsePlugin([]byte(deep))
	if len(ps) != 1 || ps[0].Code != Schema || !strings.Contains(ps[0].Message, "nested more than 64") {
		t.Errorf("%d levels: %v", MaxDepth+1, ps)
	}
	n := (MaxJSONBytes - 200) / 2
	huge := `{` + minimal + `,"keywords":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	if _, ps := ParsePlugin([]byte(huge)); len(ps) == 0 {
		t.Error("a bracket bomb was accepted")
	}
	if _, ps := ParseMCP([]byte(`{"mcpServers":{"s":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`)); len(ps) == 0 {
		t.Error("deep mcp.json accepted")
	}
}

// BenchmarkParsePluginWorstCase parses a file at the size limit made of
// nested brackets, the shape that used to be quadratic.
func BenchmarkParsePluginWorstCase(b *testing.B) {
	n := (MaxJSONBytes - 200) / 2
	data := []byte(`{` + minimal + `,"keywords":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ParsePlugin(data)
	}
}
