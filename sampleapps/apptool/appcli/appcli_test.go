package appcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

type fakeApp struct {
	dir    string
	closed bool
}

func (f *fakeApp) Tools() []apptool.Tool {
	return []apptool.Tool{{Name: "hello", Handler: func(_ context.Context, raw json.RawMessage) (any, error) {
		a, err := apptool.ParseArgs(raw)
		if err != nil {
			return nil, err
		}
		who := a.String("who", apptool.Required)
		if err := a.Err(); err != nil {
			return nil, err
		}
		return map[string]string{"hello": who}, nil
	}}}
}

func (f *fakeApp) Debug(_ context.Context, cmd string, args []string) (any, error) {
	switch cmd {
	case "dump":
		return map[string]any{"dir": f.dir, "args": args}, nil
	case "ring":
		if len(args) != 1 {
			return nil, apptool.Usagef("ring <id>")
		}
		return nil, apptool.Errorf("No alarm with id %s", args[0])
	case "boom":
		return nil, errors.New("disk on fire")
	}
	return nil, apptool.Usagef("unknown")
}

func (f *fakeApp) Close() error { f.closed = true; return nil }

func TestMain_(t *testing.T) {
	var opened *fakeApp
	p := Program{
		Name: "fake",
		Open: func(_ context.Context, dir string) (Instance, error) {
			opened = &fakeApp{dir: dir}
			return opened, nil
		},
		Commands: []Command{Debug("dump", ""), Debug("ring", "<id>"), Debug("boom", ""), Tool},
		Getenv:   func(k string) string { return map[string]string{DataEnv: "envdir"}[k] },
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"env data dir", []string{"dump"}, 0, `{"args":[],"dir":"envdir"}`},
		{"flag data dir", []string{"--data", "d1", "dump", "x"}, 0, `{"args":["x"],"dir":"d1"}`},
		{"tool ok", []string{"tool", "hello", `{"who":"<w>"}`}, 0, `{"result":{"hello":"<w>"}}`},
		{"tool error sentence", []string{"tool", "hello", `{}`}, 1, `{"error":"Missing required parameter \"who\".","isError":true}`},
		{"unknown tool", []string{"tool", "nope"}, 1, `{"error":"Unknown tool \"nope\"."}`},
		{"user error", []string{"ring", "7"}, 1, `{"error":"No alarm with id 7"}`},
		{"other error", []string{"boom"}, 1, `{"error":"boom failed: disk on fire"}`},
		{"usage from command", []string{"ring"}, 2, `{"error":"usage: ring <id>"}`},
		{"no command", nil, 2, `{"error":"missing command"}`},
		{"unknown command", []string{"fly"}, 2, `{"error":"unknown command \"fly\""}`},
		{"bad flag", []string{"--nope", "dump"}, 2, `{"error":"flag provided but not defined: -nope"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opened = nil
			var out, errb bytes.Buffer
			code := p.Main(context.Background(), tt.args, &out, &errb)
			if code != tt.code || strings.TrimSpace(out.String()) != tt.stdout {
				t.Fatalf("code %d stdout %s stderr %s; want %d %s", code, out.String(), errb.String(), tt.code, tt.stdout)
			}
			if opened != nil && !opened.closed {
				t.Fatal("app not closed")
			}
			if code == 2 && !strings.Contains(errb.String(), "usage: fake") {
				t.Fatalf("no usage text on stderr: %s", errb.String())
			}
		})
	}
	p.Getenv = func(string) string { return "" }
	var out, errb bytes.Buffer
	if code := p.Main(context.Background(), []string{"dump"}, &out, &errb); code != 2 {
		t.Fatalf("no data dir: code %d", code)
	}
}
