package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testenv"
)

// TestOfficialTypeScriptClient drives `agentosd stdio` with the official
// ACP TypeScript client (@agentclientprotocol/sdk, pinned in
// testdata/tsclient/package-lock.json) through initialize → session/new →
// session/prompt (a scripted model streaming chunks) → session/load
// (history replayed) → session/list → session/cancel, and checks what the
// client received. It runs `npm ci` when node_modules is missing and is
// skipped only when node or npm is not installed.
func TestOfficialTypeScriptClient(t *testing.T) {
	t.Parallel()
	node, npm := testenv.NeedNode(t)
	dir, err := filepath.Abs(filepath.Join("testdata", "tsclient"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(node, "client.mjs", testBin, dataDir(t))
	cmd.Dir = dir
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	var got struct {
		Initialize struct {
			ProtocolVersion int    `json:"protocolVersion"`
			AgentName       string `json:"agentName"`
			LoadSession     bool   `json:"loadSession"`
			Profile         int    `json:"profile"`
		} `json:"initialize"`
		NewSession struct {
			SessionID string   `json:"sessionId"`
			Modes     []string `json:"modes"`
		} `json:"newSession"`
		Prompt struct {
			StopReason string   `json:"stopReason"`
			TaskID     string   `json:"taskId"`
			Text       string   `json:"text"`
			Kinds      []string `json:"kinds"`
		} `json:"prompt"`
		Load struct {
			Kinds    []string `json:"kinds"`
			User     string   `json:"user"`
			Agent    string   `json:"agent"`
			Replayed int      `json:"replayed"`
		} `json:"load"`
		List []struct {
			SessionID    string `json:"sessionId"`
			Title        string `json:"title"`
			HasUpdatedAt bool   `json:"hasUpdatedAt"`
		} `json:"list"`
		Cancel struct {
			StopReason string `json:"stopReason"`
			TaskID     string `json:"taskId"`
			Chunks     int    `json:"chunks"`
		} `json:"cancel"`
		ExitCode int `json:"exitCode"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if got.Initialize.ProtocolVersion != 1 || got.Initialize.AgentName != "agentos" || !got.Initialize.LoadSession || got.Initialize.Profile != 1 {
		t.Errorf("initialize: %+v", got.Initialize)
	}
	if !strings.HasPrefix(got.NewSession.SessionID, "ses_") || strings.Join(got.NewSession.Modes, ",") != "default,read_only,chat" {
		t.Errorf("session/new: %+v", got.NewSession)
	}
	if got.Prompt.StopReason != "end_turn" || got.Prompt.Text != "Hello from the script." || !strings.HasPrefix(got.Prompt.TaskID, "tsk_") ||
		len(got.Prompt.Kinds) == 0 {
		t.Errorf("session/prompt: %+v", got.Prompt)
	}
	for _, k := range got.Prompt.Kinds {
		if k != "agent_message_chunk" {
			t.Errorf("live updates include %s", k)
		}
	}
	n := len(got.Load.Kinds)
	if n < 3 || got.Load.Kinds[0] != "user_message_chunk" || got.Load.Kinds[n-1] != "session_info_update" ||
		got.Load.Agent != "Hello from the script." || !strings.HasPrefix(got.Load.User, "#!agentos-script") || got.Load.Replayed != n-1 {
		t.Errorf("session/load: %+v", got.Load)
	}
	if len(got.List) != 1 || got.List[0].SessionID != got.NewSession.SessionID || got.List[0].Title != "#!agentos-script" || !got.List[0].HasUpdatedAt {
		t.Errorf("session/list: %+v", got.List)
	}
	if got.Cancel.StopReason != "cancelled" || !strings.HasPrefix(got.Cancel.TaskID, "tsk_") || got.Cancel.Chunks < 1 || got.Cancel.Chunks >= 8 {
		t.Errorf("session/cancel: %+v", got.Cancel)
	}
	if got.ExitCode != 0 {
		t.Errorf("agentosd stdio exit code %d", got.ExitCode)
	}
}
