package apps

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseAppValid(t *testing.T) {
	t.Parallel()
	a, err := ParseApp([]byte(testAppJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := &App{
		Package: "org.agentos.test.app", Label: "Test App", VersionCode: 3, VersionName: "1.0.3", Binary: "testapp",
		Services: []Service{{Name: "org.agentos.test.app.McpService", Kind: "mcp", Server: "main"}},
		Caller:   true, Commands: []string{"id", "env"},
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("got %+v\nwant %+v", a, want)
	}
	min, err := ParseApp([]byte(`{"package":"a.b","label":"备忘录","versionCode":0,"binary":"b"}`))
	if err != nil || min.Services != nil || min.Caller || min.SharedUserID != "" || min.UsesNetwork() {
		t.Fatalf("minimal app: %+v %v", min, err)
	}
	// The network permission (the inet group for the app's processes).
	net, err := ParseApp([]byte(`{"package":"a.b","label":"x","versionCode":0,"binary":"b","permissions":["network"]}`))
	if err != nil || !net.UsesNetwork() || !reflect.DeepEqual(net.Permissions, []string{PermissionNetwork}) {
		t.Fatalf("network app: %+v %v", net, err)
	}
	none, err := ParseApp([]byte(`{"package":"a.b","label":"x","versionCode":0,"binary":"b","permissions":[]}`))
	if err != nil || none.Permissions != nil || none.UsesNetwork() {
		t.Fatalf("empty permissions: %+v %v", none, err)
	}
}

// An ACI service is a kind beside MCP servers: a controlled app declares
// it like one, and both kinds share the server-name space.
func TestParseAppACIService(t *testing.T) {
	t.Parallel()
	a, err := ParseApp([]byte(`{"package":"org.agentos.sample.browser","label":"浏览器","versionCode":1,"binary":"browser",
		"services":[{"name":"org.agentos.sample.browser.BrowserAciService","kind":"aci","server":"browser"},
		            {"name":"org.agentos.sample.browser.McpService","kind":"mcp","server":"tools"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := a.Service("browser"); !ok || s.Kind != ServiceKindACI {
		t.Fatalf("aci service: %+v %v", s, ok)
	}
	if s, ok := a.Service("tools"); !ok || s.Kind != ServiceKindMCP {
		t.Fatalf("mcp service: %+v %v", s, ok)
	}
}

func TestParseAppRejects(t *testing.T) {
	t.Parallel()
	base := map[string]any{}
	json.Unmarshal([]byte(testAppJSON), &base)
	with := func(k string, v any) string {
		m := map[string]any{}
		for kk, vv := range base {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	svc := func(name, kind, server string) []any {
		return []any{map[string]any{"name": name, "kind": kind, "server": server}}
	}
	tests := []struct {
		name  string
		doc   string
		field string
	}{
		{"not json", `{"package":`, ""},
		{"array", `[]`, ""},
		{"trailing data", testAppJSON + `{}`, ""},
		{"repeated key", `{"package":"a.b","package":"c.d","label":"x","versionCode":1,"binary":"b"}`, "package"},
		{"repeated nested key", strings.Replace(testAppJSON, `"kind":"mcp"`, `"kind":"mcp","kind":"mcp"`, 1), "kind"},
		{"unknown key", with("extra", 1), "extra"},
		{"case-folded key", strings.Replace(testAppJSON, `"package"`, `"Package"`, 1), "Package"},
		{"missing package", with("package", nil), "package"},
		{"missing versionCode", with("versionCode", nil), "versionCode"},
		{"missing binary", with("binary", nil), "binary"},
		{"missing label", with("label", nil), "label"},
		{"one-segment package", with("package", "notes"), "package"},
		{"package with dash", with("package", "org.agent-os.x"), "package"},
		{"package segment digit first", with("package", "org.1x"), "package"},
		{"package too long", with("package", "a."+strings.Repeat("b", MaxPackageLen)), "package"},
		{"package not a string", with("package", 5), "package"},
		{"empty label", with("label", ""), "label"},
		{"blank label", with("label", "   "), "label"},
		{"label control char", with("label", "a\u0007b"), "label"},
		{"label bidi override", with("label", "a\u202eb"), "label"},
		{"label too long", with("label", strings.Repeat("字", MaxLabelChars+1)), "label"},
		{"negative versionCode", `{"package":"a.b","label":"x","versionCode":-1,"binary":"b"}`, "versionCode"},
		{"fractional versionCode", `{"package":"a.b","label":"x","versionCode":1.5,"binary":"b"}`, "versionCode"},
		{"exponent versionCode", `{"package":"a.b","label":"x","versionCode":1e3,"binary":"b"}`, "versionCode"},
		{"huge versionCode", `{"package":"a.b","label":"x","versionCode":9007199254740992,"binary":"b"}`, "versionCode"},
		{"string versionCode", with("versionCode", "3"), "versionCode"},
		{"binary with slash", with("binary", "../x"), "binary"},
		{"binary dot-dot", with("binary", ".."), "binary"},
		{"bad sharedUserId", with("sharedUserId", "shared"), "sharedUserId"},
		{"caller not bool", with("caller", "yes"), "caller"},
		{"services not array", with("services", map[string]any{}), "services"},
		{"service kind", with("services", svc("a.B", "binder", "main")), "services[0].kind"},
		{"service server dot", with("services", svc("a.B", "mcp", "a.b")), "services[0].server"},
		{"service name space", with("services", svc("a B", "mcp", "main")), "services[0].name"},
		{"service unknown key", with("services", []any{map[string]any{"name": "a", "kind": "mcp", "server": "s", "x": 1}}), "services[0].x"},
		{"service missing server", with("services", []any{map[string]any{"name": "a", "kind": "mcp"}}), "services[0].server"},
		{"duplicate server", with("services", append(svc("a", "mcp", "s"), svc("b", "mcp", "s")...)), "services[1].server"},
		{"server shared by an MCP and an ACI service", with("services", append(svc("a", "mcp", "s"), svc("b", "aci", "s")...)), "services[1].server"},
		{"service kind is case-sensitive", with("services", svc("a.B", "ACI", "main")), "services[0].kind"},
		{"duplicate service name", with("services", append(svc("a", "mcp", "s"), svc("a", "mcp", "t")...)), "services[1].name"},
		{"serve command", with("commands", []any{"serve"}), "commands[0]"},
		{"bad command", with("commands", []any{"Dump"}), "commands[0]"},
		{"duplicate command", with("commands", []any{"dump", "dump"}), "commands[1]"},
		{"commands not strings", with("commands", []any{1}), "commands"},
		{"unknown permission", with("permissions", []any{"camera"}), "permissions[0]"},
		{"permission listed twice", with("permissions", []any{"network", "network"}), "permissions[1]"},
		{"permissions not strings", with("permissions", map[string]any{"network": true}), "permissions"},
		{"too large", `{"label":"` + strings.Repeat("x", MaxAppJSONBytes) + `"}`, ""},
		{"too deep", `{"services":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, ""},
		{"not utf-8", "{\"label\":\"\xff\"}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseApp([]byte(tt.doc))
			var ae *AppError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *AppError", err)
			}
			if ae.Field != tt.field {
				t.Fatalf("field %q (%v), want %q", ae.Field, err, tt.field)
			}
			if !strings.HasPrefix(err.Error(), "app.json: ") {
				t.Errorf("message %q", err)
			}
		})
	}
}

func FuzzParseApp(f *testing.F) {
	f.Add([]byte(testAppJSON))
	f.Add([]byte(`{"package":"a.b","label":"x","versionCode":0,"binary":"b"}`))
	f.Add([]byte(`{"package":"a.b","package":"a.b"}`))
	f.Add([]byte(`{"services":[{"name":"a","kind":"mcp","server":"s"}],"commands":["x"]}`))
	f.Add([]byte(`[[[[{}]]]]`))
	f.Add([]byte(`{"package":"a.b","label":"x","versionCode":0,"binary":"b","permissions":["network"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseApp(data)
		if err != nil {
			var ae *AppError
			if !errors.As(err, &ae) {
				t.Fatalf("error is not an *AppError: %v", err)
			}
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("accepted app fails Validate: %v", err)
		}
		// What was accepted survives a round trip unchanged.
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := ParseApp(b)
		if err != nil {
			t.Fatalf("re-encoded app rejected: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(a, b2) {
			t.Fatalf("round trip changed the app:\n%+v\n%+v", a, b2)
		}
	})
}
