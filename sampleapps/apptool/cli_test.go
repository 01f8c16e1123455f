package apptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
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
			args, env, data := withData(t, tt.args, tt.env)
			app := &fakeApp{}
			opened := false
			cli := CLI{
				Name: "fake",
				Open: func(_ context.Context, dir string) (App, error) {
					opened = true
					if dir != data {
						t.Errorf("data dir %q", dir)
					}
					if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
						t.Errorf("data dir not created before Open: %v", err)
					}
					return app, nil
				},
				DebugCommands: []string{"dump", "broken", "refuse", "args"},
				Commands: map[string]Command{"serve": func(context.Context, App, []string) (any, error) {
					return map[string]bool{"served": true}, nil
				}},
			}
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), args, func(string) string { return env }, &stdout, &stderr)
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

// withData replaces the data directory "d" of a table's arguments and
// environment with one under t.TempDir() that does not exist yet.
func withData(t *testing.T, args []string, env string) ([]string, string, string) {
	data := filepath.Join(t.TempDir(), "fresh", "d")
	args = slices.Clone(args)
	for i, a := range args {
		if a == "d" {
			args[i] = data
		}
	}
	if env == "d" {
		env = data
	}
	return args, env, data
}

func TestCLIOpenFailure(t *testing.T) {
	cli := CLI{Name: "fake", Open: func(context.Context, string) (App, error) { return nil, errors.New("locked") }, DebugCommands: []string{"dump"}}
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"--data", t.TempDir(), "dump"}, nil, &stdout, &stderr); code != 1 {
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
			args, env, _ := withData(t, tt.args, tt.env)
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
			code := cli.Main(context.Background(), args, func(string) string { return env }, &stdout, &stderr)
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

// --help, -h, help and `<command> --help` print what the binary does on
// stdout and exit 0, without a data directory and without opening the
// app (a user exploring the binary has neither).
func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"tool", "--help"}, {"--data", "x", "dump", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cli := CLI{Name: "fake", DebugCommands: []string{"dump", "reset"},
				Open:    func(context.Context, string) (App, error) { t.Fatal("opened the app for help"); return nil, nil },
				Streams: map[string]Command{"serve": nil, "mcp": nil}}
			cli.Streams["serve"] = func(context.Context, App, []string) (any, error) { return nil, nil }
			cli.Streams["mcp"] = cli.Streams["serve"]
			var stdout, stderr bytes.Buffer
			if code := cli.Main(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); code != ExitOK {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			for _, want := range []string{"usage: fake [--data DIR] <command>", "serve --server NAME", "mcp --stdio", "tool NAME", "dump, reset", "AGENTOS_APP_DATA"} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("help lacks %q:\n%s", want, stdout.String())
				}
			}
		})
	}
}
