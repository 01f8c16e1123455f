package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

func TestLanguage(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"zh_CN.UTF-8": "zh-CN", "en_US": "en-US", "C": "en", "": "en", "de_DE@euro": "de-DE", "C.UTF-8": "en", "POSIX": "en"} {
		if got := Language(in); got != want {
			t.Errorf("Language(%q) = %q, want %q", in, got, want)
		}
	}
}

// debugApp answers every debug command with its name and arguments.
type debugApp struct{ fakeApp }

func (debugApp) Debug(_ context.Context, cmd string, args []string) (any, error) {
	return map[string]any{"cmd": cmd, "args": args}, nil
}

// The binary's command line opens the app with the binary's logger under
// the data directory, runs its debug commands, and has the serve and mcp
// streams.
func TestBinaryCLI(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	var gotDir string
	var gotLogger *slog.Logger
	b := Binary{Name: "thing", Server: "thing", DebugCommands: []string{"tool", "dump"},
		Open: func(ctx context.Context, dataDir string, l *slog.Logger) (apptool.App, error) {
			gotDir, gotLogger = dataDir, l
			return debugApp{}, nil
		}}
	cli := b.CLI(logger)
	if cli.Name != "thing" || cli.Streams["serve"] == nil || cli.Streams["mcp"] == nil {
		t.Fatalf("cli = %+v", cli)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"--data", dir, "dump", "x"}, func(string) string { return "" }, &stdout, &stderr)
	var doc map[string]any
	if code != apptool.ExitOK || json.Unmarshal(stdout.Bytes(), &doc) != nil || doc["cmd"] != "dump" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if gotDir != dir || gotLogger != logger {
		t.Errorf("opened with %q and %p, want %q and %p", gotDir, gotLogger, dir, logger)
	}
}
