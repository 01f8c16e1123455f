package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentoslab/agentlab/internal/testenv"
)

// npm ci runs at most once per test binary.
var (
	npmOnce sync.Once
	npmErr  string
)

// mcpClient runs testdata/mcpclient/client.mjs (the official MCP
// TypeScript client), installing its pinned dependencies with npm ci when
// node_modules is missing. It skips the test only when node or npm is
// absent.
func mcpClient(t *testing.T) func(bin, data string, plan []call) clientOut {
	t.Helper()
	node, npm := testenv.NeedNode(t)
	dir, err := filepath.Abs(filepath.Join("testdata", "mcpclient"))
	if err != nil {
		t.Fatal(err)
	}
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err == nil {
			return
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = err.Error() + "\n" + string(out)
		}
	})
	if npmErr != "" {
		t.Fatalf("npm ci: %s", npmErr)
	}
	return func(bin, data string, plan []call) clientOut {
		t.Helper()
		p, _ := json.Marshal(plan)
		cmd := exec.Command(node, "client.mjs", bin, data, string(p))
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("client.mjs: %v\n%s", err, stderr.String())
		}
		var out clientOut
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("client.mjs printed %q: %v\n%s", stdout.String(), err, stderr.String())
		}
		return out
	}
}

type call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

type clientOut struct {
	Server struct{ Name, Version string }
	Tools  []struct {
		Name        string
		Annotations struct {
			ReadOnlyHint    *bool
			DestructiveHint *bool
		}
		InputSchema struct{ Type string }
	}
	Results []struct {
		IsError    bool
		Text       *string
		Structured map[string]any
		RPCError   *struct {
			Code    int
			Message string
		}
	}
}

// Each app's `mcp --stdio`, driven by the official MCP TypeScript client:
// the server is named after the app, tools/list holds the app's
// documented tools with object schemas and destructiveHint exactly on
// *_delete and sms_send, a creating call lands in the app's store (its
// dump shows it), a bad call is an isError result with one sentence, and
// an unknown tool is a protocol error.
func TestMCPStdioWithTypeScriptClient(t *testing.T) {
	client := mcpClient(t)
	buildApps(t, sampleApps...)
	tests := []struct {
		app      string
		plan     []call
		created  string // text the dump must hold afterwards ("" for none)
		errorOut string // the isError sentence of the plan's second call
	}{
		{"alarm", []call{{"alarm_create", map[string]any{"time": "07:00", "label": "ts-client"}}, {"alarm_get", map[string]any{"id": 999}}},
			"ts-client", "No alarm with id 999"},
		{"calendar", []call{{"event_create", map[string]any{"title": "ts-client", "start": "2026-10-13T15:00:00+08:00"}}, {"event_get", map[string]any{"id": "local:999"}}},
			"ts-client", ""},
		{"notes", []call{{"note_create", map[string]any{"content": "ts-client note", "tags": []string{"e2e"}}}, {"note_get", map[string]any{"id": 999}}},
			"ts-client note", "No note with id 999."},
		{"todo", []call{{"todo_create", map[string]any{"title": "ts-client"}}, {"todo_get", map[string]any{}}},
			"ts-client", `Missing required parameter "id".`},
		{"sms", []call{{"sms_thread_list", map[string]any{}}, {"sms_send", map[string]any{"to": "+8613700000001"}}},
			"", `Missing required parameter "text".`},
	}
	for _, tt := range tests {
		t.Run(tt.app, func(t *testing.T) {
			t.Parallel()
			bin := appBinary(t, tt.app)
			data := t.TempDir()
			plan := append(tt.plan, call{"no_such_tool", map[string]any{}})
			out := client(bin, data, plan)
			if out.Server.Name != tt.app {
				t.Errorf("server name %q", out.Server.Name)
			}
			listed := map[string]bool{}
			for _, tl := range out.Tools {
				listed[tl.Name] = true
				d := tl.Annotations.DestructiveHint
				if tl.InputSchema.Type != "object" || high(tl.Name) != (d != nil && *d) {
					t.Errorf("%s: schema type %q, destructiveHint %v", tl.Name, tl.InputSchema.Type, d)
				}
			}
			for _, name := range documented[tt.app] {
				if !listed[name] {
					t.Errorf("tools/list lacks %s", name)
				}
			}
			if len(out.Results) != 3 {
				t.Fatalf("results %+v", out.Results)
			}
			first, second, unknown := out.Results[0], out.Results[1], out.Results[2]
			if first.IsError || first.RPCError != nil || first.Structured == nil || first.Text == nil || !json.Valid([]byte(*first.Text)) {
				t.Errorf("%s: %+v", plan[0].Name, first)
			}
			if !second.IsError || second.Text == nil || strings.Count(*second.Text, "\n") > 0 ||
				(tt.errorOut != "" && *second.Text != tt.errorOut) {
				t.Errorf("%s: %+v, want the error %q", plan[1].Name, second, tt.errorOut)
			}
			if unknown.RPCError == nil && !unknown.IsError {
				t.Errorf("unknown tool answered %+v", unknown)
			}
			dump := runJSON(t, bin, "--data", data, "dump")
			if tt.created != "" && !bytes.Contains(dump, []byte(tt.created)) {
				t.Errorf("dump does not hold %q: %s", tt.created, dump)
			}
		})
	}
}
