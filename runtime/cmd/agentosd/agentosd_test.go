package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sessionOf(m msg) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(m.Params, &p)
	return p.SessionID
}

// waitUpdates waits until n updates of the session satisfy pred.
func (r *rpc) waitUpdates(session string, n int, pred func(update) bool) []update {
	r.t.Helper()
	var seen []update
	count := 0
	for count < n {
		m, _, ok := r.wait(func(m msg) bool { return m.Method == "session/update" && sessionOf(m) == session }, 20*time.Second)
		if !ok {
			r.t.Fatalf("session %s: saw %d of %d updates: %s", session, count, n, kindsOf(seen))
		}
		u := updatesOf([]msg{m})[0]
		seen = append(seen, u)
		if pred(u) {
			count++
		}
	}
	return seen
}

func errorCode(t *testing.T, raw json.RawMessage) string {
	var info struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatalf("error info %s: %v", raw, err)
	}
	return info.Code
}

// TestCrashRecoveryAfterSIGKILL kills a serving runtime with SIGKILL in
// the middle of two turns — one streaming text, one inside a dispatched
// tool call — and restarts it on the same data: everything sent before
// the kill is in the log, both sessions load, the unfinished tasks are
// recovery_required (agent_core_failed and tool_result_unknown) and their
// sessions refuse prompts until the owner decides.
func TestCrashRecoveryAfterSIGKILL(t *testing.T) {
	t.Parallel()
	data, prefix := dataDir(t), uniquePrefix()
	s := startServe(t, testBin, data, prefix)
	c := s.dial()
	setup := map[string]any{"protocolVersion": 1, "_meta": map[string]any{"org.agentos": map[string]any{"extensions": []string{"sessionSetup"}}}}
	c.call("initialize", setup, nil)
	streaming, calling := c.newSession(), c.newSession()

	c.send("session/prompt", scriptPrompt(streaming, "steps:",
		`  - text: ["alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta ", "eta ", "theta "]`, "    intervalMs: 300"))
	live := chunkText(c.waitUpdates(streaming, 2, func(u update) bool { return u.Update.Kind == "agent_message_chunk" }), "agent_message_chunk")
	c.send("session/prompt", scriptPrompt(calling, "steps:", "  - toolCalls:", "      - name: slow", "        arguments: {ms: 600000}"))
	c.waitUpdates(calling, 1, func(u update) bool { return u.Update.Kind == "tool_call_update" && u.Update.Status == "in_progress" })

	// The heartbeat is rewritten shortly after the task count changes, not
	// synchronously with it; the streaming turn runs for 2.4 s more.
	assert.Eventually(t, func() bool {
		hb := readAll(t, filepath.Join(data, "heartbeat"))
		return strings.Contains(hb, "state=busy") && strings.Contains(hb, "tasks=2")
	}, 2*time.Second, 20*time.Millisecond, "heartbeat while busy: state=busy tasks=2")
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited

	s2 := startServe(t, testBin, data, prefix)
	d := s2.dial()
	d.call("initialize", setup, nil)

	replay := updatesOf(d.call("session/load", map[string]any{"sessionId": streaming, "cwd": "/it", "mcpServers": []any{}}, nil))
	got := chunkText(replay, "agent_message_chunk")
	if !strings.HasPrefix(got, live) || live == "" {
		t.Fatalf("replayed text %q does not keep what was streamed before the kill (%q)", got, live)
	}
	marker := replay[len(replay)-1].Update.Meta["org.agentos"].(map[string]any)
	if at := marker["activeTask"].(map[string]any); at["state"] != "recovery_required" {
		t.Fatalf("activeTask %v", at)
	}
	if fmt.Sprint(marker["setup"]) != fmt.Sprintf("map[replayed:%d]", len(replay)-1) {
		t.Fatalf("setup marker %v for %d updates", marker["setup"], len(replay)-1)
	}
	m, _ := d.response(d.send("session/prompt", map[string]any{"sessionId": streaming, "prompt": []map[string]any{{"type": "text", "text": "again"}}}))
	if m.Error == nil || m.Error.Code != -32049 || m.Error.Data.AgentosCode != "recovery_required" {
		t.Fatalf("prompt during recovery: %+v", m.Error)
	}

	replay = updatesOf(d.call("session/load", map[string]any{"sessionId": calling, "cwd": "/it", "mcpServers": []any{}}, nil))
	if k := kindsOf(replay); k != "user_message_chunk tool_call/pending tool_call_update/in_progress tool_call_update/failed session_info_update" {
		t.Fatalf("tool turn replay: %s", k)
	}

	st, err := store.Open(context.Background(), filepath.Join(data, "agentos.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	codes := map[string]string{}
	for _, id := range []string{streaming, calling} {
		tasks, err := st.Tasks(context.Background(), store.TaskQuery{SessionID: id})
		if err != nil || len(tasks) != 1 || tasks[0].State != store.TaskRecoveryRequired {
			t.Fatalf("tasks of %s: %+v %v", id, tasks, err)
		}
		codes[id] = errorCode(t, tasks[0].Error)
	}
	if codes[streaming] != "agent_core_failed" || codes[calling] != "tool_result_unknown" {
		t.Fatalf("recovery codes %v", codes)
	}
}

// TestSIGTERMStopsGracefully: SIGTERM stops accepting, cancels the running
// task (written as cancelled, not left for recovery), says stopping in the
// heartbeat and exits 0; the next start finds nothing to recover.
func TestSIGTERMStopsGracefully(t *testing.T) {
	t.Parallel()
	data, prefix := dataDir(t), uniquePrefix()
	s := startServe(t, testBin, data, prefix)
	c := s.dial()
	id := c.newSession()
	c.send("session/prompt", scriptPrompt(id, "steps:", "  - toolCalls:", "      - name: slow", "        arguments: {ms: 600000}"))
	c.waitUpdates(id, 1, func(u update) bool { return u.Update.Status == "in_progress" })
	start := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	if s.err != nil {
		t.Fatalf("exit: %v\n%s", s.err, s.stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("graceful stop took %v", d)
	}
	if hb := readAll(t, filepath.Join(data, "heartbeat")); !strings.Contains(hb, "state=stopping") {
		t.Errorf("heartbeat after stop:\n%s", hb)
	}
	s2 := startServe(t, testBin, data, prefix)
	d := s2.dial()
	var res struct {
		StopReason string `json:"stopReason"`
	}
	d.call("session/resume", map[string]any{"sessionId": id, "cwd": "/it"}, nil)
	d.call("session/prompt", map[string]any{"sessionId": id, "prompt": []map[string]any{{"type": "text", "text": "still here"}}}, &res)
	if res.StopReason != "end_turn" {
		t.Fatalf("prompt after a graceful restart: %q", res.StopReason)
	}
	if strings.Contains(s2.stderr.String(), "recovered unfinished tasks") {
		t.Fatalf("a graceful stop left tasks to recover:\n%s", s2.stderr)
	}
}

// TestStdio: stdin ending does not cut the answer to a prompt already
// sent; the process exits 0 once the task is done.
func TestStdio(t *testing.T) {
	t.Parallel()
	data := dataDir(t)
	cmd := exec.Command(testBin, "stdio", "--data", data)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = &syncbuf.Buffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	c := newRPC(t, struct {
		io.Reader
		io.WriteCloser
	}{stdout, stdin})
	id := c.newSession()
	c.send("session/prompt", scriptPrompt(id, "steps:", `  - text: ["one ", "two ", "three"]`, "    intervalMs: 50"))
	stdin.Close()
	m, before := c.response(2)
	if !strings.Contains(string(m.Result), `"stopReason":"end_turn"`) || chunkText(updatesOf(before), "agent_message_chunk") != "one two three" {
		t.Fatalf("answer after stdin closed: %s %s", m.Result, kindsOf(updatesOf(before)))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stdio exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("stdio did not exit after stdin ended")
	}
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(testBin, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "dev" {
		t.Fatalf("version: %q %v", out, err)
	}
	for _, args := range [][]string{{}, {"bogus"}, {"serve"}, {"stdio", "--no-such-flag"}} {
		err := exec.Command(testBin, args...).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: %v, want exit code 2", args, err)
		}
	}
}

// Admission on the core's ACP listener (serve --allow-own-uid; without
// the flag the socket is desktop pairing's, tested in runtime/bridge),
// with real uids: root, shell and the runtime's own uid are admitted; any
// other uid is closed before a byte is read.
func TestServeAdmission(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to run processes under other uids")
	}
	const runtimeUID, appUID = 12345, 23456
	exe := helperBinary(t)
	tests := []struct {
		name      string
		clientUID int
		want      string
	}{
		{"root", 0, "answered"},
		{"shell", 2000, "answered"},
		{"runtime's own uid", runtimeUID, "answered"},
		{"app uid", appUID, "closed"},
	}
	data := dataDir(t)
	os.Chown(data, runtimeUID, runtimeUID)
	os.Chown(filepath.Join(data, "model.json"), runtimeUID, runtimeUID)
	prefix := uniquePrefix()
	cmd := exec.Command(testBin, "serve", "--data", data, "--socket-prefix", prefix, "--allow-own-uid")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: runtimeUID, Gid: runtimeUID}}
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	name := transport.Names{Prefix: prefix}.ACP()
	require.Eventually(t, func() bool {
		c, err := transport.Dial(context.Background(), name)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 5*time.Millisecond, "serve did not listen: %s", stderr)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			probe := exec.Command(exe)
			probe.Env = append(os.Environ(), helperEnv+"="+name)
			probe.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(tc.clientUID), Gid: uint32(tc.clientUID)}}
			out, err := probe.Output()
			if err != nil {
				t.Fatalf("probe: %v %s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Fatalf("client uid %d: %s, want %s", tc.clientUID, got, tc.want)
			}
		})
	}
}

// helperEnv makes the test binary a probe client: it dials the named
// socket, sends initialize and prints "answered" or "closed".
const helperEnv = "AGENTOSD_TEST_PROBE"

func helperMain() int {
	c, err := transport.Dial(context.Background(), os.Getenv(helperEnv))
	if err != nil {
		fmt.Println("dial failed:", err)
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"))
	buf := make([]byte, 64)
	if n, _ := c.Read(buf); n > 0 {
		fmt.Println("answered")
	} else {
		fmt.Println("closed")
	}
	return 0
}

// helperBinary copies the test binary where any uid may run it.
func helperBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentosd-probe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	src, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "probe")
	if err := os.WriteFile(exe, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}
