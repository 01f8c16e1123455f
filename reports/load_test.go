package reports

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWriteLoadRoundTrip writes every format, loads results.json back and
// re-renders: the same run and byte-identical files must come out, as
// `agentlab report` relies on.
func TestWriteLoadRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := Write(dir, sampleRun()); err != nil {
		t.Fatal(err)
	}
	for _, f := range allFormats {
		if _, err := os.Stat(filepath.Join(dir, f.FileName())); err != nil {
			t.Errorf("Write did not write %s: %v", f.FileName(), err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(allFormats) {
		t.Errorf("Write left %d files, want %d (no temporary files)", len(entries), len(allFormats))
	}

	loaded, err := Load(filepath.Join(dir, FormatJSON.FileName()))
	if err != nil {
		t.Fatal(err)
	}
	if want := prepare(sampleRun()); !reflect.DeepEqual(loaded, want) {
		t.Errorf("loaded run differs from the written one")
	}
	again := t.TempDir()
	if err := Write(again, loaded); err != nil {
		t.Fatal(err)
	}
	for _, f := range allFormats {
		a, _ := os.ReadFile(filepath.Join(dir, f.FileName()))
		b, _ := os.ReadFile(filepath.Join(again, f.FileName()))
		if !bytes.Equal(a, b) {
			t.Errorf("%s re-rendered from results.json differs:\n%s", f.FileName(), firstDiff(a, b))
		}
	}

	// One format only, into a directory that does not exist yet.
	sub := filepath.Join(t.TempDir(), "a", "b")
	if err := Write(sub, loaded, FormatJUnit); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 1 || entries[0].Name() != "junit.xml" {
		t.Errorf("Write(junit) wrote %v", entries)
	}
	if err := Write(sub, loaded, Format("pdf")); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Write(pdf) = %v, want ErrUnknownFormat", err)
	}
}

// TestLoadVersions: any document of major 1 loads, unknown fields and all;
// anything else is refused with an error naming the file and the version.
func TestLoadVersions(t *testing.T) {
	t.Parallel()
	sample := string(renderT(t, sampleRun(), FormatJSON))
	tests := []struct {
		name    string
		doc     string
		wantErr error
		wantMsg string
	}{
		{"current", sample, nil, ""},
		{"newer minor with new fields", strings.Replace(strings.Replace(sample, `"schemaVersion": "`+SchemaVersion+`"`, `"schemaVersion": "1.9", "futureField": {"a": [1, 2]}`, 1),
			`"verdict": "fail",`, `"verdict": "fail", "blame": "someone",`, 1), nil, ""},
		{"major 2", strings.Replace(sample, `"schemaVersion": "`+SchemaVersion+`"`, `"schemaVersion": "2.0"`, 1), ErrSchemaVersion, `"2.0" (this build reads 1.x)`},
		{"major 0", `{"schemaVersion": "0.9"}`, ErrSchemaVersion, `"0.9"`},
		{"no version", `{"runId": "x"}`, ErrSchemaVersion, "schemaVersion is missing"},
		{"version not a string", `{"schemaVersion": 1.0}`, ErrInvalid, "not a results document"},
		{"version not major.minor", `{"schemaVersion": "1"}`, ErrSchemaVersion, "not major.minor"},
		{"unknown verdict", strings.Replace(sample, `"verdict": "fail",
      "reason"`, `"verdict": "blocked",
      "reason"`, 1), ErrInvalid, `scenarios[5].verdict "blocked" is not a verdict`},
		{"unknown attempt verdict", strings.Replace(sample, `"device": "vd-1",
          "verdict": "fail"`, `"device": "vd-1",
          "verdict": "maybe"`, 1), ErrInvalid, `scenarios[0].attempts[0].verdict "maybe"`},
		{"not JSON", `<testsuites/>`, ErrInvalid, "not a results document"},
		{"wrong type", strings.Replace(sample, `"durationMs": 48000`, `"durationMs": "48 s"`, 1), ErrInvalid, "durationMs"},
		{"empty file", ``, ErrInvalid, "not a results document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "results.json")
			if err := os.WriteFile(path, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Load(path)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if r.RunID != sampleRun().RunID || len(r.Scenarios) != len(sampleRun().Scenarios) {
					t.Fatalf("Load lost content: %+v", r.Summary)
				}
				// Re-rendered, it is a document of this package's version.
				if out := string(renderT(t, r, FormatJSON)); !strings.Contains(out, `"schemaVersion": "`+SchemaVersion+`"`) || strings.Contains(out, "futureField") {
					t.Errorf("re-rendered results.json keeps the newer version or its fields")
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Load = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q should name the file and contain %q", err, tc.wantMsg)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
}

// FuzzDecode feeds arbitrary bytes to Decode: it may refuse them but must
// not panic, and whatever it accepts must render in every format.
func FuzzDecode(f *testing.F) {
	f.Add(renderT(f, sampleRun(), FormatJSON))
	f.Add([]byte(`{"schemaVersion":"1.0","runId":"x","scenarios":[{"name":"a","verdict":"pass","attempts":[{"attempt":1,"verdict":"flaky"}]}]}`))
	f.Add([]byte(`{"schemaVersion":"1.0","devices":[{"serial":"d","timeline":[{"kind":"x","start":"2026-01-01T00:00:00Z","end":"2025-01-01T00:00:00Z"}]}]}`))
	f.Add([]byte(`{"schemaVersion":"2.0"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"schemaVersion":"1.0","scenarios":[{"name":"a","verdict":"fail","checks":[{"name":"c","evidence":"artifact:"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		_ = r.Validate()
		jsonTwins(t, "decoded", r)
		jsonTwins(t, "decoded and prepared", prepare(r))
		for _, format := range allFormats {
			var buf bytes.Buffer
			if err := Render(&buf, r, format); err != nil {
				t.Fatalf("decoded run does not render as %s: %v", format, err)
			}
		}
		_ = Diff(r, r)
		_ = ExitCode(r)
	})
}

func TestArtifactOf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "artifacts", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "artifacts", "a", "log.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := ArtifactOf(dir, "artifacts/a/log.txt", ArtifactLog)
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of "hello\n"
	want := Artifact{Path: "artifacts/a/log.txt", Kind: ArtifactLog, Size: 6, SHA256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}
	if a != want {
		t.Errorf("ArtifactOf = %+v, want %+v", a, want)
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", `a\b`, "./a"} {
		if _, err := ArtifactOf(dir, bad, ArtifactLog); !errors.Is(err, ErrInvalid) {
			t.Errorf("ArtifactOf(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := ArtifactOf(dir, "artifacts/missing", ArtifactLog); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
