package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ctlRun runs `agentosd ctl` against s with stdin and returns the exit
// code and everything it printed.
func (s *server) ctlRun(stdin string, args ...string) (int, string) {
	s.t.Helper()
	cmd := exec.Command(testBin, append([]string{"ctl", "--socket-prefix", s.names.Prefix}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return 0, out.String()
}

// TestModelClearStopsRunningTurn: the owner clears the model while a turn
// streams slowly. The prompt answers model_not_configured with
// details.reason key_revoked and the spec's message, the task ends
// failed with that error (event log and tasks row), the prompt queued
// behind it on another connection gets plain model_not_configured, the
// session loads with no task left active, and the key appears in no log,
// error or ctl output.
func TestModelClearStopsRunningTurn(t *testing.T) {
	t.Parallel()
	const key = "sk-clear-e2e-SECRET-4c1d9e"
	data, prefix := dataDir(t), uniquePrefix()
	s := startServe(t, testBin, data, prefix, "--log-level", "debug")
	var ctlOut strings.Builder
	if code, out := s.ctlRun(key+"\n", "model", "set", "--provider", "scripted", "--key-stdin"); code != 0 {
		t.Fatalf("model set: %d %s", code, out)
	} else {
		ctlOut.WriteString(out)
	}

	c := s.dial()
	c.call("initialize", map[string]any{"protocolVersion": 1}, nil)
	id := c.newSession()
	running := c.send("session/prompt", scriptPrompt(id, "steps:",
		"  - text: [one, two, three, four, five, six, seven, eight, nine, ten, eleven, twelve]", "    intervalMs: 1000"))
	live := chunkText(c.waitUpdates(id, 2, func(u update) bool { return u.Update.Kind == "agent_message_chunk" }), "agent_message_chunk")

	// A second connection's prompt on the same session queues behind it.
	q := s.dial()
	q.call("initialize", map[string]any{"protocolVersion": 1}, nil)
	q.call("session/load", map[string]any{"sessionId": id, "cwd": "/it", "mcpServers": []any{}}, nil)
	queued := q.send("session/prompt", map[string]any{"sessionId": id, "prompt": []map[string]any{{"type": "text", "text": "after"}}})
	// The queued prompt's task.queued is in the log before the clear.
	s.waitQueued()

	code, out := s.ctlRun("", "model", "clear", "--json")
	ctlOut.WriteString(out)
	if code != 0 || !strings.Contains(out, `"configured":false`) {
		t.Fatalf("model clear: %d %s", code, out)
	}

	m, _ := c.response(running)
	if m.Error == nil {
		t.Fatalf("the running prompt answered %s", m.Result)
	}
	e := m.Error
	if e.Code != errcode.ModelNotConfigured.RPC() || e.Data.AgentosCode != string(errcode.ModelNotConfigured) ||
		e.Data.Details["reason"] != "key_revoked" || e.Message != string(errcode.ModelNotConfigured)+": "+engine.KeyRevokedText ||
		e.Data.TaskID == "" {
		t.Fatalf("running prompt's error: %+v", e)
	}
	revokedTask := e.Data.TaskID

	mq, _ := q.response(queued)
	if mq.Error == nil || mq.Error.Data.AgentosCode != string(errcode.ModelNotConfigured) || mq.Error.Data.Details != nil ||
		strings.Contains(mq.Error.Message, "removed") || mq.Error.Data.TaskID == revokedTask {
		t.Fatalf("queued prompt's error: %+v", mq.Error)
	}

	// session/load: the streamed text is kept and no task is left active.
	d := s.dial()
	d.call("initialize", map[string]any{"protocolVersion": 1}, nil)
	replay := updatesOf(d.call("session/load", map[string]any{"sessionId": id, "cwd": "/it", "mcpServers": []any{}}, nil))
	if got := chunkText(replay, "agent_message_chunk"); !strings.HasPrefix(got, live) || strings.Contains(got, "twelve") {
		t.Fatalf("replayed text %q (streamed before the clear: %q)", got, live)
	}
	for _, u := range replay {
		if at, ok := u.Update.Meta["org.agentos"].(map[string]any); ok && at["activeTask"] != nil {
			t.Fatalf("a task is still active: %v", at["activeTask"])
		}
	}

	// Stop serve and read the store: the task ended failed with the
	// key_revoked error, written in its row and its terminal event.
	s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
	st, err := store.Open(context.Background(), filepath.Join(data, "agentos.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tasks, err := st.Tasks(context.Background(), store.TaskQuery{SessionID: id})
	if err != nil || len(tasks) != 2 {
		t.Fatalf("tasks: %+v %v", tasks, err)
	}
	for _, tk := range tasks {
		var info errcode.Info
		json.Unmarshal(tk.Error, &info)
		wantReason := ""
		if tk.ID == revokedTask {
			wantReason = "key_revoked"
		}
		if tk.State != store.TaskFailed || info.Code != errcode.ModelNotConfigured || reasonOf(info) != wantReason {
			t.Fatalf("task %s: %s %s", tk.ID, tk.State, tk.Error)
		}
	}
	evs, err := st.Events(context.Background(), id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, ev := range evs {
		if ev.Type == engine.EvTaskFailed && ev.TaskID == revokedTask {
			failed = append(failed, string(ev.Body))
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], `"reason":"key_revoked"`) {
		t.Fatalf("task.failed events of the revoked task: %v", failed)
	}

	for what, text := range map[string]string{"serve's log": s.stderr.String(), "ctl's output": ctlOut.String(),
		"the prompt's error": e.Message + mq.Error.Message} {
		if strings.Contains(text, key) {
			t.Errorf("the key is in %s", what)
		}
	}
}

func reasonOf(info errcode.Info) string {
	r, _ := info.Details["reason"].(string)
	return r
}

// waitQueued waits until the runtime counts one queued task.
func (s *server) waitQueued() {
	s.t.Helper()
	ctx := context.Background()
	c, err := admin.Dial(ctx, s.names.Admin())
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	require.EventuallyWithT(s.t, func(ct *assert.CollectT) {
		var st struct {
			Tasks admin.TaskCounts `json:"tasks"`
		}
		require.NoError(ct, c.Call(ctx, "status", nil, &st))
		assert.Equal(ct, 1, st.Tasks.Queued, "queued task: %+v", st.Tasks)
	}, 20*time.Second, 5*time.Millisecond)
}
