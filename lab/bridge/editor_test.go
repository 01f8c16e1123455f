package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/provision"
	"github.com/agentoslab/agentlab/lab/runtimectl"
)

// TestEditorThroughBridge is the README's editor path as a test: a
// provisioned virtual device behind a real adb server, the README's Zed
// snippet (its serial replaced) run by the official ACP TypeScript client
// as Zed runs it, and the built agentlab binary on PATH. It pins:
//
//   - unpaired, the editor's initialize gets a JSON-RPC error naming the
//     device and the command that pairs it (the editor saw EOF before);
//   - agentlab bridge code prints a code only, and --pair pairs over adb
//     as root without printing one;
//   - a stdio MCP server in session/new leaves the thread working, with
//     the bridge's notice (the whole thread failed with -32602 before);
//   - a WRITE tool call shows the tool's title and kind, the final name in
//     _meta, and the consent wait while the owner is asked (answered here
//     through agentosd ctl consent); then it completes.
//
// It needs root (virtual devices), adb, node and npm; it runs `npm ci`
// in testdata/editor when node_modules is missing.
func TestEditorThroughBridge(t *testing.T) {
	node, npm := testenv.NeedNode(t)
	dev := startADBDevice(t, "magisk")
	serial := dev.vd.Serial()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	editorDir, err := filepath.Abs(filepath.Join("testdata", "editor"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(editorDir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = editorDir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci: %s", out)
	}

	// The device: the runtime module, notes (a WRITE tool with a title),
	// the lab's model stub, desktop access on.
	arts := editorArtifacts(t, ctx)
	stub, err := modelstub.Start(nil)
	require.NoError(t, err)
	defer stub.Close()
	token := modelstub.NewToken()
	require.NoError(t, stub.Bind(token, nil))
	d := adb.NewServer(dev.srv.Addr(), nil).Device(serial)
	require.NoError(t, d.WaitBoot(ctx))
	res, err := provision.Provision(ctx, d, arts, &provision.Options{
		Model: provision.Model{Stub: &provision.StubModel{Port: stub.Port(), Token: token}}, Apps: []string{"notes"}, Desktop: true})
	require.NoError(t, err, "provision: %+v", res)
	ctl := runtimectl.New(d, nil)
	require.NoError(t, ctl.ConsentMode(ctx, runtimectl.ConsentOff), "cards wait for the owner")

	// agentlab as the editor finds it: on PATH, talking to this test's
	// adb server, with its own state file.
	bin := t.TempDir()
	goBuild := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "agentlab"), "github.com/agentoslab/agentlab/lab/cmd/agentlab")
	out, err := goBuild.CombinedOutput()
	require.NoError(t, err, "go build agentlab: %s", out)
	env := append(dev.srv.Env(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"AGENTOS_BRIDGE_STATE="+filepath.Join(t.TempDir(), "bridge.json"), "ANDROID_SERIAL=")

	// bridge code prints the code alone; it is never on stderr.
	codeCmd := exec.CommandContext(ctx, filepath.Join(bin, "agentlab"), "bridge", "code", "-s", serial)
	codeCmd.Env = env
	var codeErr bytes.Buffer
	codeCmd.Stderr = &codeErr
	code, err := codeCmd.Output()
	require.NoError(t, err, "bridge code: %s", codeErr.String())
	assert.Regexp(t, regexp.MustCompile(`^[0-9]{6}\n$`), string(code))
	assert.NotContains(t, codeErr.String(), strings.TrimSpace(string(code)))
	assert.Contains(t, codeErr.String(), "agentlab bridge pair -s "+serial+" <code>")

	// The README's snippet, for this device.
	settings := readmeSnippet(t)
	args := settings.AgentServers["AgentOS (phone)"].Args
	require.Equal(t, []string{"bridge", "-s", "emulator-5554", "--quiet"}, args, "the README's snippet")
	args[2] = serial
	cfg := map[string]any{
		"settings": settings,
		"pair":     []string{"bridge", "code", "-s", serial, "--pair"},
		"prompt": "#!agentos-script\nsteps:\n  - toolCalls:\n      - mcp: [notes, notes, note_create]\n" +
			"        arguments: {title: From the editor, content: Written through agentlab bridge.}\nfinal: Noted.\n",
		"stdioServer": map[string]any{"name": "filesystem", "command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/user/project"}, "env": []any{}},
	}
	cfgFile := filepath.Join(t.TempDir(), "editor.json")
	b, _ := json.Marshal(cfg)
	require.NoError(t, os.WriteFile(cfgFile, b, 0o600))

	cmd := exec.CommandContext(ctx, node, "editor.mjs", cfgFile)
	cmd.Dir = editorDir
	cmd.Env = env
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var result json.RawMessage
	answered := ""
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Event      string          `json:"event"`
			ToolCallID string          `json:"toolCallId"`
			Result     json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "editor output %q", sc.Text())
		switch {
		case line.Event == "consent-wait":
			// The editor shows the wait: now the owner answers the card.
			answered = answerCard(t, ctx, ctl)
		case line.Result != nil:
			result = line.Result
		}
	}
	require.NoError(t, cmd.Wait(), "editor: %s", stderr.String())
	require.NotNil(t, result, "editor: %s", stderr.String())
	t.Logf("editor saw: %s", result)

	var got struct {
		Unpaired struct {
			Code     int    `json:"code"`
			Message  string `json:"message"`
			ExitCode int    `json:"exitCode"`
			Data     struct {
				AgentosCode string         `json:"agentosCode"`
				Details     map[string]any `json:"details"`
			} `json:"data"`
		} `json:"unpaired"`
		Pair struct {
			ExitCode int    `json:"exitCode"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
		} `json:"pair"`
		Initialize struct {
			ProtocolVersion int    `json:"protocolVersion"`
			AgentName       string `json:"agentName"`
		} `json:"initialize"`
		NewSession struct {
			SessionID  string         `json:"sessionId"`
			Notice     string         `json:"notice"`
			NoticeMeta map[string]any `json:"noticeMeta"`
		} `json:"newSession"`
		Prompt struct {
			StopReason string            `json:"stopReason"`
			Updates    []json.RawMessage `json:"updates"`
		} `json:"prompt"`
		Error    string `json:"error"`
		ExitCode int    `json:"exitCode"`
		Stderr   string `json:"stderr"`
	}
	require.NoError(t, json.Unmarshal(result, &got))
	require.Empty(t, got.Error, "bridge stderr: %s", got.Stderr)

	// 1. Unpaired: an error the editor can show, with what to do.
	assert.Equal(t, -32000, got.Unpaired.Code)
	assert.Equal(t, "auth_required", got.Unpaired.Data.AgentosCode)
	assert.Contains(t, got.Unpaired.Message, "not paired with adb:"+serial)
	assert.Contains(t, got.Unpaired.Message, "agentlab bridge code -s "+serial+" --pair")
	assert.Equal(t, ExitAuth, got.Unpaired.ExitCode)

	// 2. Paired by bridge code --pair, no code shown.
	assert.Equal(t, 0, got.Pair.ExitCode, "pair: %s", got.Pair.Stderr)
	assert.Empty(t, got.Pair.Stdout)
	// A pairing code is six digits on its own; pairing ids (dp_<hex>) may hold digit runs.
	assert.NotRegexp(t, regexp.MustCompile(`\b[0-9]{6}\b`), got.Pair.Stderr)

	// 3. The thread works with a stdio server and says it was left out.
	assert.Equal(t, 1, got.Initialize.ProtocolVersion)
	assert.Equal(t, "agentos", got.Initialize.AgentName)
	assert.True(t, strings.HasPrefix(got.NewSession.SessionID, "ses_"), got.NewSession.SessionID)
	assert.Equal(t, NoticeText([]string{"filesystem"}), got.NewSession.Notice)

	// 4. The WRITE tool: title, kind, name, the consent wait, completion.
	require.NotEmpty(t, answered, "the editor never reported the consent wait")
	assert.Equal(t, "end_turn", got.Prompt.StopReason)
	type upd struct {
		Kind       string          `json:"sessionUpdate"`
		ToolCallID string          `json:"toolCallId"`
		Title      string          `json:"title"`
		ToolKind   string          `json:"kind"`
		Status     string          `json:"status"`
		Content    json.RawMessage `json:"content"`
		Meta       struct {
			AgentOS struct {
				ToolName string `json:"toolName"`
				Consent  string `json:"consent"`
			} `json:"org.agentos"`
		} `json:"_meta"`
	}
	var seq []string
	var call upd
	var text strings.Builder
	for _, raw := range got.Prompt.Updates {
		var u upd
		require.NoError(t, json.Unmarshal(raw, &u))
		switch u.Kind {
		case "tool_call":
			call = u
			seq = append(seq, "tool_call/"+u.Status)
		case "tool_call_update":
			s := "update/" + u.Status
			if u.Meta.AgentOS.Consent != "" {
				s += "(" + u.Meta.AgentOS.Consent + ")"
			}
			seq = append(seq, s)
			if u.Status == "completed" {
				assert.Contains(t, string(u.Content), "From the editor", "the note came back")
			}
			if u.Meta.AgentOS.Consent == "pending" {
				assert.Contains(t, string(u.Content), "Waiting for approval on the phone (AgentOS asks its owner).")
			}
		case "agent_message_chunk":
			var c struct{ Text string }
			json.Unmarshal(u.Content, &c)
			text.WriteString(c.Text)
		}
	}
	assert.Equal(t, "Create a note", call.Title)
	assert.Equal(t, "edit", call.ToolKind)
	assert.True(t, strings.HasPrefix(call.Meta.AgentOS.ToolName, "mcp__notes__"), call.Meta.AgentOS.ToolName)
	assert.Equal(t, []string{"tool_call/pending", "update/pending(pending)", "update/pending(allowed)", "update/in_progress", "update/completed"}, seq)
	assert.Equal(t, NoticeText([]string{"filesystem"})+"Noted.", text.String(), "the thread: the notice, then the answer")
	assert.Equal(t, "DESKTOP", answered, "the card was the desktop's")
	assert.Equal(t, 0, got.ExitCode, "the bridge ends with the editor's input: %s", got.Stderr)
}

// answerCard allows the one pending consent card and returns its caller
// kind.
func answerCard(t *testing.T, ctx context.Context, ctl *runtimectl.Client) string {
	t.Helper()
	raw, err := ctl.ConsentPending(ctx)
	require.NoError(t, err)
	var cards []struct {
		RequestID  string `json:"requestId"`
		CallerKind string `json:"callerKind"`
		ToolName   string `json:"toolName"`
	}
	require.NoError(t, json.Unmarshal(raw, &cards))
	require.Len(t, cards, 1, "%s", raw)
	_, err = ctl.ConsentRespond(ctx, cards[0].RequestID, "ALLOW_ONCE")
	require.NoError(t, err)
	return cards[0].CallerKind
}

// zedSettings is the README's settings.json snippet.
type zedSettings struct {
	AgentServers map[string]struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	} `json:"agent_servers"`
}

// readmeSnippet is the first json block of the README's Editors section.
func readmeSnippet(t *testing.T) zedSettings {
	t.Helper()
	root, err := build.FindRoot(".")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Editors\n")
	require.True(t, ok, "README has an Editors section")
	_, block, ok := strings.Cut(section, "```json\n")
	require.True(t, ok, "the Editors section has a json block")
	block, _, _ = strings.Cut(block, "```")
	var s zedSettings
	require.NoError(t, json.Unmarshal([]byte(block), &s), "the README's snippet is JSON")
	a, ok := s.AgentServers["AgentOS (phone)"]
	require.True(t, ok)
	assert.Equal(t, "custom", a.Type)
	assert.Equal(t, "agentlab", a.Command)
	return s
}

// editorArtifacts builds the runtime and the notes app once per run; the
// build cache is shared with the other lab tests (content-addressed).
func editorArtifacts(t *testing.T, ctx context.Context) *build.Artifacts {
	t.Helper()
	root, err := build.FindRoot(".")
	require.NoError(t, err)
	cache := filepath.Join(os.TempDir(), "agentlab-test-build", "cache")
	dir := t.TempDir()
	arts, err := build.Build(ctx, &build.Options{Root: root, OutDir: filepath.Join(dir, "out"), CacheDir: cache,
		SigningKey: filepath.Join(dir, "signing.key"), Version: "editortest-1", Apps: []string{"notes"}})
	require.NoError(t, err, "build")
	return arts
}
