package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/sampleapps/internal/callertest"
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
		{"seed", nil, append(d, "seed"), 0, func(m map[string]any) bool { return m["inserted"] == 5.0 }},
		{"seed again via env", []string{"AGENTOS_APP_DATA=" + data}, []string{"seed"}, 0, func(m map[string]any) bool { return m["inserted"] == 0.0 && m["total"] == 5.0 }},
		{"dump", nil, append(d, "dump"), 0, func(m map[string]any) bool { return m["total"] == 5.0 }},
		{"tool", nil, append(d, "tool", "note_search", `{"query":"王总"}`), 0, func(m map[string]any) bool {
			return m["result"].(map[string]any)["count"] == 1.0
		}},
		{"tool error", nil, append(d, "tool", "note_delete", `{"id":1}`), 1, func(m map[string]any) bool {
			return m["isError"] == true && m["error"] == "Only notes in the trash can be deleted; move note 1 to the trash with note_trash first."
		}},
		{"raw_prompt", []string{"LANG=zh_CN.UTF-8"}, append(d, "raw_prompt", `{"note_id":1}`), 0, func(m map[string]any) bool {
			p := m["prompt"].(string)
			return strings.Contains(p, "Device language: zh-CN.") && strings.HasSuffix(p, "</note>")
		}},
		{"ask_agent without AgentOS", []string{"AGENTOS_CALLER_SOCKET=@notes-test-nobody-listens"}, append(d, "ask_agent", `{"note_id":1}`), 0, func(m map[string]any) bool {
			return m["state"] == "error" && m["error"] == "NOT_INSTALLED" && m["gateway"] == "agentos" && m["note_id"] == 1.0 && m["pending"] == false
		}},
		{"ask_agent_status", nil, append(d, "ask_agent_status"), 0, func(m map[string]any) bool { return m["error"] == "NOT_INSTALLED" }},
		{"ask_agent_stop with nothing running", nil, append(d, "ask_agent_stop"), 1, func(m map[string]any) bool {
			return m["error"] == "No schedule round is running."
		}},
		{"reset", nil, append(d, "reset"), 0, func(m map[string]any) bool { return m["cleared"] == 5.0 }},
		{"usage", nil, append(d, "frobnicate"), 2, func(m map[string]any) bool { return strings.HasPrefix(m["error"].(string), "usage:") }},
		{"no data dir", []string{"AGENTOS_APP_DATA="}, []string{"dump"}, 2, func(m map[string]any) bool { return m["error"] != nil }},
	}
	for _, s := range steps {
		code, doc := run(t, s.env, s.args...)
		if code != s.code || !s.want(doc) {
			t.Errorf("%s: exit %d (want %d), output %v", s.name, code, s.code, doc)
		}
	}
}

// While ask_agent waits for the owner's answer, another process of the
// app sees the round waiting with ask_agent_status and stops it with
// ask_agent_stop (SIGTERM to the running process): both the stop and the
// round's own process report the round as stopped.
func TestAskAgentStatusAndStop(t *testing.T) {
	data := t.TempDir()
	caller := callertest.NewPending(t)
	if code, _ := run(t, nil, "--data", data, "seed"); code != 0 {
		t.Fatal("seed failed")
	}
	ask := exec.Command(binPath(t), "--data", data, "ask_agent", `{"note_id":1}`)
	ask.Env = append(os.Environ(), "AGENTOS_CALLER_SOCKET="+caller.Name)
	var askOut bytes.Buffer
	ask.Stdout = &askOut
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- ask.Wait() }()
	defer ask.Process.Kill()

	deadline := time.Now().Add(20 * time.Second)
	for {
		code, st := run(t, nil, "--data", data, "ask_agent_status")
		if code == 0 && st["current_state"] == "waiting_authorization" {
			if st["pending"] != true || st["state"] != "running" || caller.Opens() < 1 {
				t.Fatalf("status while waiting: %v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the round never showed waiting_authorization: %d %v", code, st)
		}
		select {
		case err := <-exited:
			t.Fatalf("ask_agent ended early: %v %s", err, askOut.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if code, doc := run(t, nil, "--data", data, "ask_agent", `{"text":"x"}`); code != 1 || !strings.Contains(doc["error"].(string), "already running") {
		t.Errorf("second round: %d %v", code, doc)
	}
	code, stopped := run(t, nil, "--data", data, "ask_agent_stop")
	if code != 0 || stopped["stopped"] != true || stopped["pending"] != false || stopped["error"] != "STOPPED" {
		t.Fatalf("stop: %d %v", code, stopped)
	}
	if err := <-exited; err != nil {
		t.Fatalf("ask_agent exit: %v", err)
	}
	var final map[string]any
	if err := json.Unmarshal(askOut.Bytes(), &final); err != nil || final["stopped"] != true || final["note_id"] != 1.0 {
		t.Fatalf("ask_agent printed %s (%v)", askOut.String(), err)
	}
}

// What a new user tries first: --help explains the binary (exit 0); a
// data directory that does not exist yet is created; and an MCP client
// piping initialize and a call into `mcp --stdio` gets both answers
// before its input ends the process. Every sample app's main is the same
// shell.Main, so notes stands for all five.
func TestBinaryFirstContact(t *testing.T) {
	out, err := exec.Command(binPath(t), "--help").Output()
	if err != nil || !strings.Contains(string(out), "usage: notes [--data DIR] <command>") {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	fresh := t.TempDir() + "/not/yet/there"
	if code, doc := run(t, nil, "--data", fresh, "dump"); code != 0 || doc["total"] != 0.0 {
		t.Fatalf("dump on a fresh data dir: exit %d, %v", code, doc)
	}
	cmd := exec.Command(binPath(t), "--data", fresh, "mcp", "--stdio")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note_create","arguments":{"title":"piped","content":"from stdin"}}}
`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("mcp --stdio: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":1`) || !strings.Contains(lines[1], `"id":2`) || !strings.Contains(lines[1], "piped") {
		t.Fatalf("answers:\n%s", out)
	}
}
