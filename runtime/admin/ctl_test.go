package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// testVerbs are the built-in verbs and verbs over the test methods,
// under their own group.
func testVerbs() []Verb {
	return append(Verbs(),
		Verb{Group: "test", Name: "echo", Method: "echo", Args: "TEXT",
			Params: func(args []string, stdin io.Reader) (any, error) {
				if len(args) != 1 {
					return nil, Usagef("want one TEXT")
				}
				return map[string]string{"text": args[0]}, nil
			},
			Text: func(w io.Writer, raw json.RawMessage) error {
				var r struct{ Text string }
				json.Unmarshal(raw, &r)
				_, err := io.WriteString(w, "echo: "+r.Text+"\n")
				return err
			}},
		Verb{Group: "test", Name: "secret", Method: "echo",
			Params: func(args []string, stdin io.Reader) (any, error) {
				b, err := io.ReadAll(io.LimitReader(stdin, 4096))
				return map[string]string{"text": strings.TrimSpace(string(b))}, err
			}},
		Verb{Group: "test", Name: "refused", Method: "fail.refused"},
		Verb{Group: "test", Name: "missing", Method: "no.such"},
		Verb{Group: "test", Name: "exit", Method: "echo",
			Finish: func(raw json.RawMessage, asJSON bool, stdout, stderr io.Writer) int { return 42 }},
	)
}

func runCtl(t *testing.T, names string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--socket-prefix", names}, args...)
	code := Ctl(context.Background(), testVerbs(), full, CtlIO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

func TestCtl(t *testing.T) {
	t.Parallel()
	_, names := startServer(t, nil)
	p := names.Prefix
	tests := []struct {
		name     string
		stdin    string
		args     []string
		code     int
		stdout   string // exact
		inStderr string
	}{
		{"text", "", []string{"test", "echo", "hello"}, ExitOK, "echo: hello\n", ""},
		{"json after verb", "", []string{"test", "echo", "hello", "--json"}, ExitOK, `{"class":"root","text":"hello","uid":0}` + "\n", ""},
		{"json before group", "", []string{"--json", "test", "echo", "hi"}, ExitOK, `{"class":"root","text":"hi","uid":0}` + "\n", ""},
		{"secret from stdin", "s3cret\n", []string{"test", "secret", "--json"}, ExitOK, `{"class":"root","text":"s3cret","uid":0}` + "\n", ""},
		{"usage: missing arg", "", []string{"test", "echo"}, ExitUsage, "", "want one TEXT"},
		{"usage: unknown verb", "", []string{"test", "nope"}, ExitUsage, "", `unknown command "test nope"`},
		{"usage: nothing", "", nil, ExitUsage, "", "missing command"},
		{"usage: extra args", "", []string{"test", "refused", "x"}, ExitUsage, "", "takes no arguments"},
		{"refused text", "", []string{"test", "refused"}, ExitFailed, "", "invalid_state: not now"},
		{"refused json", "", []string{"test", "refused", "--json"}, ExitFailed, `{"error":{"code":-32042,"message":"invalid_state: not now","data":{"agentosCode":"invalid_state","retryable":false,"details":{"reason":"downgrade"}}}}` + "\n", ""},
		{"finish sets the exit code", "", []string{"test", "exit"}, 42, "", ""},
		{"unknown method on the server", "", []string{"test", "missing"}, ExitFailed, "", "unknown admin method"},
		{"usage: a group alone", "", []string{"test"}, ExitUsage, "", "test needs a verb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCtl(t, p, tt.stdin, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errs)
			}
			if tt.stdout != "" || code == ExitOK {
				if out != tt.stdout {
					t.Errorf("stdout %q, want %q", out, tt.stdout)
				}
			}
			if !strings.Contains(errs, tt.inStderr) {
				t.Errorf("stderr %q lacks %q", errs, tt.inStderr)
			}
		})
	}
}

func TestCtlUnreachable(t *testing.T) {
	t.Parallel()
	code, _, errs := runCtl(t, testNames(t).Prefix, "", "status")
	if code != ExitUnreachable || !strings.Contains(errs, "not reachable") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestCtlStatusWithSections(t *testing.T) {
	t.Parallel()
	names := testNames(t)
	s := NewServer(&Options{Name: names.Admin(), Version: "1.2.3", Status: []StatusSection{{Name: "apps", Read: func(context.Context) (any, error) {
		return map[string]int{"installed": 3}, nil
	}}}})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code, out, errs := runCtl(t, names.Prefix, "", "status")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"agentosd 1.2.3", "safe mode   off", "apps        installed=3"} {
		if !strings.Contains(out, want) {
			t.Errorf("status text lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCtl(t, names.Prefix, "", "status", "--json")
	var st map[string]any
	if code != ExitOK || json.Unmarshal([]byte(out), &st) != nil || st["version"] != "1.2.3" {
		t.Fatalf("status --json: %d %s", code, out)
	}
}
