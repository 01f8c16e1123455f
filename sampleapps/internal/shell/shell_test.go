package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fakeApp struct{}

func (fakeApp) Tools() []apptool.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`)
	return []apptool.Tool{
		{Name: "thing_get", Description: "Get a thing.", InputSchema: schema,
			Annotations: apptool.Annotations{ReadOnlyHint: apptool.Bool(true)},
			Handler: func(_ context.Context, raw json.RawMessage) (any, error) {
				args, err := apptool.ParseArgs(raw)
				if err != nil {
					return nil, err
				}
				id := args.Int("id", apptool.Required)
				if err := args.Err(); err != nil {
					return nil, err
				}
				if id != 1 {
					return nil, apptool.Errorf("No thing with id %d", id)
				}
				return map[string]any{"id": 1, "name": "one"}, nil
			}},
		{Name: "thing_delete", Description: "Delete a thing.", InputSchema: schema,
			Annotations: apptool.Annotations{DestructiveHint: apptool.Bool(true)},
			Handler:     func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("disk on fire") }},
	}
}

func (fakeApp) Debug(context.Context, string, []string) (any, error) { return nil, nil }
func (fakeApp) Close() error                                         { return nil }

// serve runs the serve command on a fresh abstract socket until the test
// ends and returns the socket's name.
func serve(t *testing.T, args ...string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	socket := "@shell-test-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Streams("things", nil)["serve"](ctx, fakeApp{}, append([]string{"--socket", socket}, args...))
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return socket
}

// The serve command puts the app's tools, annotations and error
// conventions on the socket as the provider SDK serves them.
func TestServe(t *testing.T) {
	t.Parallel()
	socket := serve(t, "--server", "things")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var c *plugin.Client
	var err error
	// The listener appears when the goroutine gets to it.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c, err = plugin.Dial(ctx, socket, os.Getuid(), nil)
		require.NoError(ct, err, "dial")
	}, 10*time.Second, 10*time.Millisecond)
	defer c.Close()
	if name, _ := c.ServerInfo(); name != "things" {
		t.Errorf("server name %q", name)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]plugin.ToolInfo{}
	for _, ti := range tools {
		byName[ti.Name] = ti
	}
	get, del := byName["thing_get"], byName["thing_delete"]
	if len(tools) != 2 || del.DestructiveHint == nil || !*del.DestructiveHint || get.DestructiveHint != nil ||
		get.ReadOnlyHint == nil || !*get.ReadOnlyHint {
		t.Fatalf("tools %+v", tools)
	}
	tests := []struct {
		tool, args string
		isError    bool
		text       string
	}{
		{"thing_get", `{"id":1}`, false, `{"id":1,"name":"one"}`},
		{"thing_get", `{"id":7}`, true, "No thing with id 7"},
		{"thing_get", `{}`, true, `Missing required parameter "id".`},
		// An internal error reaches the model as one sentence, no details.
		{"thing_delete", `{"id":1}`, true, "thing_delete failed."},
	}
	for _, tt := range tests {
		r, err := c.CallTool(ctx, tt.tool, json.RawMessage(tt.args))
		if err != nil {
			t.Fatalf("%s %s: %v", tt.tool, tt.args, err)
		}
		if r.IsError != tt.isError || r.Text != tt.text {
			t.Errorf("%s %s = %+v, want isError %v text %q", tt.tool, tt.args, r, tt.isError, tt.text)
		}
	}
}

// A command line the SDK refuses is the CLI's usage error (exit 2).
func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		args []string
	}{
		{"serve", []string{"--server", "other", "--socket", "@unused"}},
		{"serve", []string{"--bogus"}},
		{"mcp", nil},
		{"mcp", []string{"--stdio", "extra"}},
	}
	for _, tt := range tests {
		_, err := Streams("things", nil)[tt.cmd](context.Background(), fakeApp{}, tt.args)
		var ue *apptool.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s %v: %v, want a usage error", tt.cmd, tt.args, err)
		}
	}
}
