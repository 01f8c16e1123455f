package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestLoadModels(t *testing.T) {
	t.Parallel()
	const cfg = `{"provider":"openai","baseUrl":"https://api.example.com/v1","model":"m","choices":["m","n"]}`
	env := func(vals map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	}
	tests := []struct {
		name    string
		config  string
		keyFile string // content of <data>/model.key (mode 0600) when set
		keyMode os.FileMode
		flagKey string // content of the --model-key-file when set
		env     map[string]string
		want    bool
	}{
		{"no configuration", "", "", 0, "", nil, false},
		{"scripted needs no key", `{"provider":"scripted","model":"s"}`, "", 0, "", nil, true},
		{"http provider without a key", cfg, "", 0, "", nil, false},
		{"key in model.key", cfg, "sk-file", 0o600, "", nil, true},
		{"model.key readable by others is refused", cfg, "sk-file", 0o644, "", nil, false},
		{"key from the environment", cfg, "", 0, "", map[string]string{ModelKeyEnv: "sk-env"}, true},
		{"key from --model-key-file", cfg, "", 0, "sk-flag", nil, true},
		{"unknown field", `{"provider":"scripted","key":"sk-inline"}`, "", 0, "", nil, false},
		{"not JSON", `provider: scripted`, "", 0, "", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			if tc.config != "" {
				writeFile(t, filepath.Join(data, "model.json"), tc.config, 0o600)
			}
			if tc.keyFile != "" {
				writeFile(t, filepath.Join(data, "model.key"), tc.keyFile, tc.keyMode)
			}
			flagPath := ""
			if tc.flagKey != "" {
				flagPath = filepath.Join(t.TempDir(), "key")
				writeFile(t, flagPath, tc.flagKey, 0o600)
			}
			var logs strings.Builder
			log := slog.New(slog.NewTextHandler(&logs, nil))
			sys := &System{opts: Options{Data: data, ModelKeyFile: flagPath, LookupEnv: env(tc.env), Logger: log}, log: log}
			src, err := sys.openModels()
			if err != nil {
				t.Fatal(err)
			}
			_, p, ok := src.Current()
			ok = ok && p != nil
			if ok != tc.want {
				t.Fatalf("model usable %v, want %v; log:\n%s", ok, tc.want, logs.String())
			}
			for _, secret := range []string{"sk-file", "sk-env", "sk-flag", "sk-inline"} {
				if strings.Contains(logs.String(), secret) {
					t.Fatalf("the key reached the log:\n%s", logs.String())
				}
			}
		})
	}
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	h := newHeartbeat(data, time.Hour, clk)
	path := filepath.Join(data, "heartbeat")
	require.NoError(t, h.set(stateStarting, 0))
	hb, err := supervise.ReadHeartbeat(path)
	require.NoError(t, err)
	assert.Equal(t, supervise.Heartbeat{PID: os.Getpid(), At: 1_700_000_000_000, State: "starting"}, *hb)
	tasks := make(chan int, 1)
	tasks <- 2
	n := 0
	h.start(func() int {
		select {
		case n = <-tasks:
		default:
		}
		return n
	})
	// Polled from Eventually's goroutine: a read error is collected, not fatal.
	reads := func(state string, tasks int) func(c *assert.CollectT) {
		return func(c *assert.CollectT) {
			hb, err := supervise.ReadHeartbeat(path)
			require.NoError(c, err)
			assert.Equal(c, state, hb.State)
			assert.Equal(c, tasks, hb.Tasks)
		}
	}
	require.EventuallyWithT(t, reads("busy", 2), 10*time.Second, 2*time.Millisecond)
	tasks <- 0
	h.poke()
	require.EventuallyWithT(t, reads("idle", 0), 10*time.Second, 2*time.Millisecond)
	h.close()
	h.set(stateStopping, 0)
	hb, err = supervise.ReadHeartbeat(path)
	require.NoError(t, err)
	assert.Equal(t, "stopping", hb.State)
}

// TestStdioAnswersAfterInputEnds runs Stdio in-process over pipes: the
// input ends right after a prompt, the prompt is still answered in full,
// and Stdio returns once the task is done.
func TestStdioAnswersAfterInputEnds(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "model.json"), `{"provider":"scripted","model":"s"}`, 0o600)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Stdio(context.Background(), &Options{Data: data, Version: "t", Tools: &enginetest.Tools{}}, inR, outW)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(s string) { inW.Write([]byte(s + "\n")) }
	send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &created) != nil || created.Result.SessionID == "" {
		t.Fatalf("session/new: %s", lines.Text())
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + created.Result.SessionID +
		`","prompt":[{"type":"text","text":"#!agentos-script\nsteps:\n  - text: [\"a\", \"b\", \"c\"]\n    intervalMs: 30"}]}}`)
	inW.Close()
	var text strings.Builder
	for lines.Scan() {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Params struct {
				Update struct {
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		json.Unmarshal(lines.Bytes(), &m)
		text.WriteString(m.Params.Update.Content.Text)
		if m.ID == 2 {
			if !strings.Contains(string(m.Result), "end_turn") {
				t.Fatalf("answer %s", lines.Text())
			}
			break
		}
	}
	if text.String() != "abc" {
		t.Fatalf("streamed %q", text.String())
	}
	go io.Copy(io.Discard, outR)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stdio did not return after its input ended")
	}
	hb, err := supervise.ReadHeartbeat(filepath.Join(data, "heartbeat"))
	if err != nil || hb.State != "stopping" {
		t.Fatalf("heartbeat %+v %v", hb, err)
	}
}
