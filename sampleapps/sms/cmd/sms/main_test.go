package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// binPath is the app's binary, built once for the test binary; the
// tests run it as the launcher and the lab would.
func binPath(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, ".")
}

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m))
}

func run(t *testing.T, env []string, args ...string) (int, map[string]any) {
	t.Helper()
	return sampletest.RunBinary(t, binPath(t), nil, env, args...)
}

func TestBinary(t *testing.T) {
	data := t.TempDir()
	d := []string{"--data", data}
	steps := []struct {
		name string
		env  []string
		args []string
		code int
		want func(map[string]any) bool
	}{
		{"seed", nil, append(d, "seed"), 0, func(m map[string]any) bool { return m["inserted"] == 8.0 }},
		{"inbox add", []string{"AGENTOS_APP_DATA=" + data}, []string{"inbox", "add", "+8613700000002", "下午4点开电话会。", "--at", "2026-10-12T15:00:00+08:00"}, 0,
			func(m map[string]any) bool { return m["date"] != nil && m["type"] == "received" }},
		{"tool masked read", nil, append(d, "tool", "sms_message_list", `{"address":"13700000001"}`), 0, func(m map[string]any) bool {
			b, _ := json.Marshal(m)
			return strings.Contains(string(b), "••••••") && !strings.Contains(string(b), "6688")
		}},
		{"injection send refused", nil, append(d, "tool", "sms_send", `{"to":"10086","text":"退订全部"}`), 1, func(m map[string]any) bool {
			return m["isError"] == true && strings.HasPrefix(m["error"].(string), "Refusing to send to 10086")
		}},
		{"set", nil, append(d, "set", "mask_codes", "false"), 0, func(m map[string]any) bool { return m["value"] == "false" }},
		{"set bad", nil, append(d, "set", "rate_limit", "99"), 1, func(m map[string]any) bool { return m["error"] == "rate_limit must be a whole number from 1 to 30." }},
		{"instructions", nil, append(d, "instructions"), 0, func(m map[string]any) bool { return m["customized"] == false }},
		{"processed", nil, append(d, "processed"), 0, func(m map[string]any) bool { return m["count"] == 0.0 }},
		{"raw_prompt", []string{"LANG=zh_CN.UTF-8"}, append(d, "raw_prompt", `{"address":"+8613700000002"}`), 0, func(m map[string]any) bool {
			return m["messages"] == 5.0 && strings.HasSuffix(m["prompt"].(string), "</sms>")
		}},
		{"ask_agent without AgentOS", []string{"AGENTOS_CALLER_SOCKET=@sms-test-nobody-listens"}, append(d, "ask_agent", `{"address":"+8613700000002"}`), 0, func(m map[string]any) bool {
			// Nothing reached AgentOS, so nothing is marked processed.
			return m["state"] == "error" && m["error"] == "NOT_INSTALLED" && m["messages"] == 5.0 && m["marked_processed"] == false
		}},
		{"ask_agent_status", nil, append(d, "ask_agent_status"), 0, func(m map[string]any) bool {
			return m["error"] == "NOT_INSTALLED" && m["address"] == "+8613700000002"
		}},
		{"still unprocessed", nil, append(d, "processed"), 0, func(m map[string]any) bool { return m["count"] == 0.0 }},
		{"dump", nil, append(d, "dump"), 0, func(m map[string]any) bool {
			return m["total"] == 9.0 && m["mode"] == "full" && len(m["outbox"].([]any)) == 0
		}},
		{"reset", nil, append(d, "reset"), 0, func(m map[string]any) bool { return m["cleared"].(map[string]any)["messages"] == 9.0 }},
		{"usage", nil, append(d, "inbox", "list"), 2, func(m map[string]any) bool { return strings.HasPrefix(m["error"].(string), "usage:") }},
	}
	for _, s := range steps {
		code, doc := run(t, s.env, s.args...)
		if code != s.code || !s.want(doc) {
			t.Errorf("%s: exit %d (want %d), output %v", s.name, code, s.code, doc)
		}
	}
}
