package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/scenarios/internal/labtest"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/lab/modelstub/fakelive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordedEcho is the scenario the test records: a desktop prompt scoped
// to mcptest's echo, answered by whatever model the run has. Its checks
// hold for any answer the random provider gives, so the recorded verdict
// is a pass and the saved scenario must pass every time.
const recordedEcho = `# yaml-language-server: $schema=../scenario.schema.json
name: rec/echo
description: A prompt a live model answers in its own way, calling echo or not.
tags: [rec]
needs: {apps: [mcptest], desktop: true, model: any}
timeout: 2m
setup:
  - consent: {mode: allow}
steps:
  - prompt:
      text: Echo something, or say something.
      tool_scope: [{plugin: mcptest, tool: echo}]
    save: chat
checks:
  - {name: endTurn, events: chat, path: .stopReason, eq: end_turn}
  - name: onlyEchoOffered
    of: model_requests
    all: {path: .tools, eq: [mcp__mcptest__test__echo]}
`

// TestRecordReplaySave is issue 17's acceptance for record and replay, end
// to end on one virtual device: a record run against a local provider
// that answers at random (OpenAI-compatible; fakelive) keeps the attempt's
// model script and manifest, with no key in any artifact; agentlab replay
// reruns it 20 times on the stub, each reproducing the recorded verdict
// and events; --save writes a scenario that validates, keeps the corpus
// rules, and passes 20 of 20 on the device without the provider.
func TestRecordReplaySave(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	agentlab, repo, adb := labtest.Agentlab(t, ctx, "records and replays a scenario on a virtual device")
	tmp := filepath.Dir(agentlab)

	stateDir := filepath.Join(tmp, "vdevices")
	name := fmt.Sprintf("rr-%d", os.Getpid())
	devPort, adbPort := testenv.FreePort(t), testenv.FreePort(t)
	labtest.MustRun(t, ctx, repo, agentlab, "vdevice", "start", "--name", name, "--port", strconv.Itoa(devPort), "--state-dir", stateDir)
	t.Cleanup(func() { exec.Command(agentlab, "vdevice", "stop", name, "--state-dir", stateDir).Run() })
	serial := "127.0.0.1:" + strconv.Itoa(devPort)
	labtest.MustRun(t, ctx, repo, adb, "-P", strconv.Itoa(adbPort), "connect", serial)
	t.Cleanup(func() { exec.Command(adb, "-P", strconv.Itoa(adbPort), "kill-server").Run() })

	suite := filepath.Join(tmp, "suite")
	require.NoError(t, os.MkdirAll(filepath.Join(suite, "rec"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(suite, "rec", "echo.yaml"), []byte(recordedEcho), 0o644))

	base := fmt.Sprintf("devices:\n  adb:\n    - server: 127.0.0.1:%d\nscenarios:\n  - %s\nretries:\n  attempts: 1\n", adbPort, suite)
	stubCfg := filepath.Join(tmp, "stub.yaml")
	require.NoError(t, os.WriteFile(stubCfg, []byte(base+"model: stub\n"), 0o644))
	agent := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, agentlab, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "FAKELIVE_KEY="+fakelive.Key, "XDG_STATE_HOME="+filepath.Join(tmp, "state"))
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(b), ee.ExitCode()
		}
		require.NoError(t, err, "agentlab %s\n%s", strings.Join(args, " "), b)
		return string(b), 0
	}

	// The full acceptance with the OpenAI dialect; the Anthropic one is
	// recorded and replayed a few times (the unit tests replay both 20
	// times each).
	for _, tc := range []struct {
		provider string
		replays  int
		save     bool
	}{{"openai", 20, true}, {"anthropic", 3, false}} {
		t.Run(tc.provider, func(t *testing.T) {
			// Mostly tool calls, so that consent, the tool and its result
			// are part of what a replay must reproduce.
			live := fakelive.Start(&fakelive.Options{ToolProbability: 0.9})
			defer live.Close()
			liveURL := live.OpenAIBaseURL()
			if tc.provider == "anthropic" {
				liveURL = live.AnthropicBaseURL()
			}
			recCfg := filepath.Join(tmp, "record-"+tc.provider+".yaml")
			require.NoError(t, os.WriteFile(recCfg, []byte(base+fmt.Sprintf(
				"model:\n  mode: record\n  provider: %s\n  baseUrl: %s\n  model: fake-live\n  keyEnv: FAKELIVE_KEY\n", tc.provider, liveURL)), 0o644))
			out := filepath.Join(tmp, "out-"+tc.provider)
			recordReplay(t, agent, live, suite, recCfg, stubCfg, out, tc.replays, tc.save)
		})
	}
}

// recordReplay records rec/echo through live, replays it, and with save
// saves it and runs the saved scenario replays times.
func recordReplay(t *testing.T, agent func(*testing.T, ...string) (string, int), live *fakelive.Server, suite, recCfg, stubCfg, out string, replays int, save bool) {
	// Record.
	logs, code := agent(t, "run", "--config", recCfg, "--out", filepath.Join(out, "record"), "--scenario", "rec/echo")
	require.Equal(t, 0, code, logs)
	res, err := labtest.ReadResults(filepath.Join(out, "record", "results.json"))
	require.NoError(t, err)
	require.Equal(t, "pass", res["rec/echo"].Verdict, logs)
	calls := live.Calls()
	require.Positive(t, calls, "the record run reached the provider")
	attempt := filepath.Join(out, "record", "artifacts", "rec_echo", "attempt-1")
	for _, f := range []string{"recording.yaml", "model-script.yaml", "events-chat.json"} {
		require.FileExists(t, filepath.Join(attempt, f))
	}
	script, _ := os.ReadFile(filepath.Join(attempt, "model-script.yaml"))
	t.Logf("recorded script (%d provider calls):\n%s", calls, script)
	require.NoError(t, filepath.WalkDir(filepath.Join(out, "record"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.NotContains(t, string(b), fakelive.Key, "the key in %s", p)
		return nil
	}))

	// Replay 20 times: every attempt reproduces the recording, and the
	// provider is not asked again.
	logs, code = agent(t, "replay", "--config", stubCfg, "--out", filepath.Join(out, "replay"), "--repeat", strconv.Itoa(replays), "--until-fail", attempt)
	require.Equal(t, 0, code, logs)
	assert.Contains(t, logs, fmt.Sprintf("%d of %d replays reproduced the recording", replays, replays))
	assert.Equal(t, calls, live.Calls(), "a replay never reaches the provider")

	if !save {
		return
	}
	// Save, validate, and run the saved scenario 20 times.
	saved := filepath.Join(suite, "rec", "echo-saved.yaml")
	logs, code = agent(t, "replay", "--save", saved, attempt)
	require.Equal(t, 0, code, logs)
	logs, code = agent(t, "scenarios", "validate", suite)
	require.Equal(t, 0, code, logs)
	doc, err := os.ReadFile(saved)
	require.NoError(t, err)
	assert.Empty(t, labtest.StyleProblems(doc), "%s breaks the suite's style rules", saved)
	logs, code = agent(t, "run", "--config", stubCfg, "--out", filepath.Join(out, "saved"), "--scenario", "rec/echo-saved", "--repeat", "20", "--json")
	require.Equal(t, 0, code, logs)
	b, err := os.ReadFile(filepath.Join(out, "saved", "results.json"))
	require.NoError(t, err)
	var run struct {
		Scenarios []struct {
			Name     string `json:"name"`
			Attempts []struct {
				Verdict string `json:"verdict"`
			} `json:"attempts"`
		} `json:"scenarios"`
	}
	require.NoError(t, json.Unmarshal(b, &run))
	passed := 0
	for _, s := range run.Scenarios {
		if s.Name != "rec/echo-saved" {
			continue
		}
		for _, at := range s.Attempts {
			passed += btoi(at.Verdict == "pass")
		}
	}
	assert.Equal(t, 20, passed, "the saved scenario passes 20 of 20, the recorded verdict")
	assert.Equal(t, calls, live.Calls())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
