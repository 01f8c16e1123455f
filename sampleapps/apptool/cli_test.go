package apptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

type fakeApp struct {
	closed bool
}

func (a *fakeApp) Tools() []Tool {
	return []Tool{{Name: "echo", Handler: func(_ context.Context, raw json.RawMessage) (any, error) {
		args, err := ParseArgs(raw)
		if err != nil {
			return nil, err
		}
		s := args.String("s", Required)
		if err := args.Err(); err != nil {
			return nil, err
		}
		return map[string]string{"s": s}, nil
	}}}
}

func (a *fakeApp) Debug(ctx context.Context, cmd string, args []string) (any, error) {
	switch cmd {
	case "tool":
		return ToolCommand(ctx, a.Tools(), args)
	case "dump":
		return map[string]int{"total": 0}, nil
	case "broken":
		return nil, errors.New("disk on fire at /secret")
	case "refuse":
		return nil, Errorf("Nothing to send.")
	case "args":
		a, err := DebugArgs(cmd, args)
		if err != nil {
			return nil, err
		}
		return map[string]int64{"n": a.Int("n")}, a.Err()
	}
	return nil, &UsageError{Msg: "unknown"}
}

func (a *fakeApp) Close() error { a.closed = true; return nil }

func TestCLIMain(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      string
		wantCode int
		wantOut  string
	}{
		{"dump", []string{"--data", "d", "dump"}, "", 0, `{"total":0}`},
		{"env data dir", []string{"dump"}, "d", 0, `{"total":0}`},
		{"no data dir", []string{"dump"}, "", 2, `{"error":"usage: no data directory: pass --data DIR or set AGENTOS_APP_DATA"}`},
		{"no command", []string{"--data", "d"}, "", 2, `{"error":"usage: missing command"}`},
		{"unknown command", []string{"--data", "d", "fly"}, "", 2, `{"error":"usage: unknown command \"fly\""}`},
		{"bad flag", []string{"--nope", "dump"}, "", 2, `{"error":"usage: flag provided but not defined: -nope"}`},
		{"tool ok", []string{"--data", "d", "tool", "echo", `{"s":"<hi>"}`}, "", 0, `{"result":{"s":"<hi>"}}`},
		{"tool error", []string{"--data", "d", "tool", "echo", `{}`}, "", 1, `{"error":"Missing required parameter \"s\".","isError":true}`},
		{"tool unknown", []string{"--data", "d", "tool", "nope"}, "", 1, `{"error":"Unknown tool \"nope\".","isError":true}`},
		{"tool usage", []string{"--data", "d", "tool"}, "", 2, `{"error":"usage: tool <name> ['<json args>']"}`},
		{"internal error hidden", []string{"--data", "d", "broken"}, "", 1, `{"error":"The broken command failed."}`},
		{"user error", []string{"--data", "d", "refuse"}, "", 1, `{"error":"Nothing to send."}`},
		{"debug args", []string{"--data", "d", "args", `{"n":3}`}, "", 0, `{"n":3}`},
		{"debug args bad", []string{"--data", "d", "args", `{"n":"x"}`}, "", 1, `{"error":"Parameter \"n\" must be an integer."}`},
		{"debug args too many", []string{"--data", "d", "args", `{}`, `{}`}, "", 2, `{"error":"usage: args takes at most one JSON object argument"}`},
		{"extra command", []string{"--data", "d", "serve"}, "", 0, `{"served":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &fakeApp{}
			opened := false
			cli := CLI{
				Name: "fake",
				Open: func(_ context.Context, dir string) (App, error) {
					opened = true
					if dir != "d" {
						t.Errorf("data dir %q", dir)
					}
					return app, nil
				},
				DebugCommands: []string{"dump", "broken", "refuse", "args"},
				Commands: map[string]Command{"serve": func(context.Context, App, []string) (any, error) {
					return map[string]bool{"served": true}, nil
				}},
			}
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), tt.args, func(string) string { return tt.env }, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if got := stdout.String(); got != tt.wantOut+"\n" {
				t.Errorf("stdout %q, want %q", got, tt.wantOut)
			}
			if opened && !app.closed {
				t.Error("app not closed")
			}
			if bytes.Contains(stdout.Bytes(), []byte("secret")) {
				t.Error("internal error leaked to stdout")
			}
		})
	}
}

func TestCLIOpenFailure(t *testing.T) {
	cli := CLI{Name: "fake", Open: func(context.Context, string) (App, error) { return nil, errors.New("locked") }, DebugCommands: []string{"dump"}}
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"--data", "x", "dump"}, nil, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if stdout.String() != `{"error":"The fake app could not open its data."}`+"\n" {
		t.Fatalf("stdout %q", stdout.String())
	}
}

// A stream command owns stdout: Main writes nothing there, whatever the
// outcome, and reports failures on stderr with the usual exit codes.
func TestCLIStreams(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        string
		run        func(io.Writer) error
		openErr    error
		wantCode   int
		wantOut    string
		wantStderr string
	}{
		{"serves", []string{"--data", "d", "mcp", "--stdio"}, "", func(w io.Writer) error { _, err := io.WriteString(w, "frame\n"); return err }, nil, 0, "frame\n", ""},
		{"usage", []string{"--data", "d", "mcp"}, "", func(io.Writer) error { return &UsageError{Msg: "mcp: usage: mcp --stdio"} }, nil, 2, "", "fake: usage: mcp: usage: mcp --stdio"},
		{"no data dir", []string{"mcp", "--stdio"}, "", nil, nil, 2, "", "fake: usage: no data directory"},
		{"open failure", []string{"mcp", "--stdio"}, "d", nil, errors.New("locked"), 1, "", "fake: The fake app could not open its data."},
		{"internal error", []string{"--data", "d", "mcp"}, "", func(io.Writer) error { return errors.New("socket gone") }, nil, 1, "", "fake mcp: socket gone"},
		{"user error", []string{"--data", "d", "mcp"}, "", func(io.Writer) error { return Errorf("No socket.") }, nil, 1, "", "fake: No socket."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cli := CLI{
				Name: "fake",
				Open: func(context.Context, string) (App, error) {
					if tt.openErr != nil {
						return nil, tt.openErr
					}
					return &fakeApp{}, nil
				},
				DebugCommands: []string{"dump"},
				// The stream writes to the process's stdout itself; here
				// the test's buffer stands in for it.
				Streams: map[string]Command{"mcp": func(context.Context, App, []string) (any, error) {
					return map[string]bool{"never": true}, tt.run(&stdout)
				}},
			}
			code := cli.Main(context.Background(), tt.args, func(string) string { return tt.env }, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if stdout.String() != tt.wantOut {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantOut)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
