package adb

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// TestRequestTranscript pins the exact smart-socket requests each Device
// method sends, in order (lab-reference B.4-B.8): host-serial forms,
// transport then service, shell v2 arguments, sync, reverse. A change here
// changes what every adb server sees. Run with -update after a deliberate
// change and review the diff.
func TestRequestTranscript(t *testing.T) {
	f := newFixture(t, true, map[string]string{"su": `case "$1" in -v) echo 27.0:MAGISKSU;; -c) shift; sh -c "$1";; esac`})
	ctx := context.Background()
	steps := []struct {
		name string
		do   func() error
	}{
		{"state", func() error { _, err := f.d.State(ctx); return err }},
		{"info", func() error { _, err := f.d.Info(ctx); return err }},
		{"shell", func() error { _, err := f.d.Shell(ctx, "exit 3"); return err }},
		{"su", func() error { _, err := f.d.Su(ctx, "id -u"); return err }},
		{"push", func() error { return f.d.Push(ctx, strings.NewReader("x"), "/data/local/tmp/x", 0o644) }},
		{"stat", func() error { _, err := f.d.Stat(ctx, "/data/local/tmp/x"); return err }},
		{"pull", func() error { return f.d.Pull(ctx, "/data/local/tmp/x", &bytes.Buffer{}) }},
		{"forward", func() error { _, err := f.d.Forward(ctx, "tcp:0", "localabstract:agentos-acp"); return err }},
		{"reverse", func() error { _, err := f.d.Reverse(ctx, "tcp:8080", "tcp:18080"); return err }},
		{"remove reverse", func() error { return f.d.RemoveReverse(ctx, "tcp:8080") }},
		{"dial", func() error {
			c, err := f.d.Dial(ctx, "localabstract:echo")
			if err == nil {
				c.Close()
			}
			return err
		}},
	}
	var b strings.Builder
	b.WriteString("# Requests devices/adb sends to the adb server, per Device method.\n")
	b.WriteString("# Regenerate with: go test ./devices/adb -run TestRequestTranscript -update\n")
	for _, s := range steps {
		before := len(f.srv.Requests())
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		b.WriteString("\n## " + s.name + "\n")
		for _, r := range f.srv.Requests()[before:] {
			// Sentinels and ports vary per run; the shapes do not.
			if strings.HasPrefix(r, "shell,v2,raw:for p in") {
				r = "shell,v2,raw:<probe script>"
			}
			b.WriteString(r + "\n")
		}
	}
	path := filepath.Join("testdata", "requests.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Fatalf("request transcript changed; run with -update and review.\ngot:\n%s\nwant:\n%s", got, want)
	}
}
