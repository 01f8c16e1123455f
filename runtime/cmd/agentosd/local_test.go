package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/syncbuf"
)

// TestHelp: every way a user asks for help — agentosd, each subcommand,
// ctl and each ctl group and verb — prints it on stdout and exits 0
// (they were "unknown command" with exit 2 once).
func TestHelp(t *testing.T) {
	t.Parallel()
	bin := release(t)
	tests := []struct {
		args []string
		want []string // each on stdout
	}{
		{[]string{"--help"}, []string{"usage: agentosd <command>", "serve", "stdio", "ctl", "supervise", "ext", "app", "module", "version"}},
		{[]string{"-h"}, []string{"usage: agentosd <command>"}},
		{[]string{"help"}, []string{"usage: agentosd <command>"}},
		{[]string{"help", "stdio"}, []string{"-model-script", "-data"}},
		{[]string{"serve", "--help"}, []string{"-data", "-socket-prefix", "-allow-own-uid"}},
		{[]string{"stdio", "--help"}, []string{"-model-script", "-model "}},
		{[]string{"supervise", "--help"}, []string{"-root"}},
		{[]string{"ext", "--help"}, []string{"-data", "-apps"}},
		{[]string{"app", "--help"}, []string{"agentosd app keygen", "agentosd app verify"}},
		{[]string{"module", "pack", "--help"}, []string{"-abi"}},
		{[]string{"version", "--help"}, []string{"usage: agentosd version"}},
		{[]string{"ctl", "--help"}, []string{"usage: agentosd ctl", "model set", "callers list", "desktop enable", "app install", "consent respond", "exit codes"}},
		{[]string{"ctl", "help"}, []string{"usage: agentosd ctl"}},
		{[]string{"ctl", "model", "--help"}, []string{"usage: agentosd ctl model <verb>", "model set", "model show", "model clear"}},
		{[]string{"ctl", "model", "set", "--help"}, []string{"usage: agentosd ctl model set --provider", "--key-stdin", "model.set"}},
		{[]string{"ctl", "help", "callers", "answer"}, []string{"usage: agentosd ctl callers answer REQUEST_ID allow|deny"}},
		{[]string{"ctl", "status", "-h"}, []string{"usage: agentosd ctl status"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, tt.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "exit status; stderr %s", stderr.String())
			for _, w := range tt.want {
				assert.Contains(t, stdout.String(), w)
			}
			assert.Empty(t, stderr.String())
		})
	}
	// A group without a verb is still a usage error, listing the group.
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "ctl", "model")
	cmd.Stderr = &stderr
	var ee *exec.ExitError
	require.True(t, errors.As(cmd.Run(), &ee))
	assert.Equal(t, 2, ee.ExitCode())
	assert.Contains(t, stderr.String(), "model needs a verb")
	assert.Contains(t, stderr.String(), "model set")
}

// stdioRun starts `agentosd stdio` with args on a data directory that
// has no model configuration, and returns a client and the process.
func stdioRun(t *testing.T, args ...string) (*rpc, *exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(release(t), append([]string{"stdio", "--data", data}, args...)...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return newRPC(t, struct {
		io.Reader
		io.WriteCloser
	}{stdout, stdin}), cmd, stderr
}

func promptText(id, text string) map[string]any {
	return map[string]any{"sessionId": id, "prompt": []map[string]any{{"type": "text", "text": text}}}
}

// TestStdioModelScript: one command runs stdio on a scripted model — no
// serve, no ctl model set, no key — and the script file answers a plain
// prompt.
func TestStdioModelScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "model.yaml")
	require.NoError(t, os.WriteFile(script, []byte("steps:\n  - text: [\"from \", \"the file\"]\n"), 0o644))
	c, _, stderr := stdioRun(t, "--model-script", script)
	id := c.newSession()
	c.send("session/prompt", promptText(id, "hello"))
	m, before := c.response(2)
	require.Nil(t, m.Error, "stderr: %s", stderr)
	assert.Contains(t, string(m.Result), `"stopReason":"end_turn"`)
	assert.Equal(t, "from the file", chunkText(updatesOf(before), "agent_message_chunk"))
}

// TestStdioWithoutModel: with nothing configured, a prompt that is its
// own script runs on the scripted provider (it failed
// model_not_configured once), and a plain prompt fails
// model_not_configured with a text that names the commands to run.
func TestStdioWithoutModel(t *testing.T) {
	t.Parallel()
	c, _, stderr := stdioRun(t)
	id := c.newSession()
	c.send("session/prompt", scriptPrompt(id, "steps:", `  - text: ["inline ", "script"]`))
	m, before := c.response(2)
	require.Nil(t, m.Error, "stderr: %s", stderr)
	assert.Equal(t, "inline script", chunkText(updatesOf(before), "agent_message_chunk"))

	c.send("session/prompt", promptText(id, "hello"))
	m, _ = c.response(3)
	require.NotNil(t, m.Error, "a plain prompt without a model: %s", m.Result)
	assert.Equal(t, "model_not_configured", m.Error.Data.AgentosCode)
	for _, cmd := range []string{"--model-script", "agentosd ctl model set"} {
		assert.Contains(t, m.Error.Message, cmd)
	}
}

// TestStdioModelFlags: --model takes only the provider that needs no
// configuration, and says what to run for the others; a script that
// cannot be read stops stdio at start.
func TestStdioModelFlags(t *testing.T) {
	t.Parallel()
	bin := release(t)
	run := func(args ...string) (int, string) {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"stdio", "--data", filepath.Join(t.TempDir(), "d")}, args...)...)
		cmd.Stdin, cmd.Stderr = strings.NewReader(""), &stderr
		done := make(chan error, 1)
		require.NoError(t, cmd.Start())
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), stderr.String()
			}
			require.NoError(t, err)
			return 0, stderr.String()
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatal("stdio did not exit")
			return 0, ""
		}
	}
	code, errs := run("--model", "openai")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "agentosd ctl model set")
	code, errs = run("--model-script", filepath.Join(t.TempDir(), "missing.yaml"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "model script")
	code, _ = run("--model", "scripted")
	assert.Equal(t, 0, code, "stdin ends at once: a clean exit")
}
