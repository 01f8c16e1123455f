package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCtlLinesAnswersLikeOneShot runs requests through one `ctl --lines`
// stream and compares each answer with the one-shot command's: the lab
// decodes both the same way, so any difference (a lost stderr, a stdin not
// fed to the verb, a Finish exit code dropped) would change its verdicts.
func TestCtlLinesAnswersLikeOneShot(t *testing.T) {
	t.Parallel()
	_, names := startServer(t, nil)
	p := names.Prefix
	reqs := []LinesRequest{
		{Args: []string{"test", "echo", "hello"}},
		{Args: []string{"--json", "test", "echo", "hi"}},
		{Args: []string{"test", "secret", "--json"}, Stdin: "s3cret\n"},
		{Args: []string{"test", "refused", "--json"}},
		{Args: []string{"test", "refused"}},
		{Args: []string{"test", "exit"}},
		{Args: []string{"test", "nope"}},
	}
	var in bytes.Buffer
	for _, r := range reqs {
		r.Args = append([]string{"--socket-prefix", p}, r.Args...)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		in.Write(b)
		in.WriteString("\n\n") // blank lines are skipped
	}
	var out, errb bytes.Buffer
	code := Ctl(context.Background(), testVerbs(), []string{"--lines"}, CtlIO{Stdin: &in, Stdout: &out, Stderr: &errb})
	require.Equal(t, ExitOK, code, errb.String())

	sc := bufio.NewScanner(&out)
	for _, r := range reqs {
		require.True(t, sc.Scan(), "an answer for %v", r.Args)
		var got LinesResponse
		require.NoError(t, json.Unmarshal(sc.Bytes(), &got))
		wantCode, wantOut, wantErr := runCtl(t, p, r.Stdin, r.Args...)
		assert.Equal(t, LinesResponse{Exit: wantCode, Stdout: wantOut, Stderr: wantErr}, got, "%v", r.Args)
	}
	assert.False(t, sc.Scan(), "one answer per request, no more")
}

func TestCtlLinesRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		in       string
		code     int
		answer   *LinesResponse // the one answer expected, nil for none
		inStderr string
	}{
		{"not JSON", []string{"--lines"}, "status\n", ExitOK,
			&LinesResponse{Exit: ExitUsage}, ""},
		{"nested", []string{"--lines"}, `{"args":["--lines"]}` + "\n", ExitOK,
			&LinesResponse{Exit: ExitUsage}, ""},
		{"other flags", []string{"--lines", "--json"}, "", ExitUsage, nil, "--lines takes no other arguments"},
		{"arguments", []string{"--lines", "status"}, "", ExitUsage, nil, "--lines takes no other arguments"},
		{"line too long", []string{"--lines"}, strings.Repeat("x", maxLinesRequest+1) + "\n", ExitUsage, nil, "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Ctl(context.Background(), testVerbs(), tt.args, CtlIO{Stdin: strings.NewReader(tt.in), Stdout: &out, Stderr: &errb})
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errb.String(), tt.inStderr)
			if tt.answer == nil {
				assert.Empty(t, out.String())
				return
			}
			var got LinesResponse
			require.NoError(t, json.NewDecoder(&out).Decode(&got))
			assert.Equal(t, tt.answer.Exit, got.Exit)
			assert.NotEmpty(t, got.Stderr, "a refusal says why")
			_, err := out.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "one answer")
		})
	}
}

// FuzzCtlLines: whatever arrives on stdin, every non-blank line gets
// exactly one well-formed answer, in order — a lost or doubled answer
// would shift every later result onto the wrong call in the lab.
func FuzzCtlLines(f *testing.F) {
	f.Add(`{"args":["--json","--socket-prefix","fuzz-none","status"]}`)
	f.Add("{\"args\":[\"--lines\"]}\n\n{")
	f.Add(`{"args":["help"],"stdin":"x"}` + "\n" + `[1,2]`)
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 4096 {
			return
		}
		var out, errb bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no call may reach a runtime: the fuzzer has none
		Ctl(ctx, testVerbs(), []string{"--lines"}, CtlIO{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb})
		want := 0
		for _, l := range strings.Split(strings.ReplaceAll(in, "\r", ""), "\n") {
			if strings.TrimSpace(l) != "" {
				want++
			}
		}
		got := 0
		dec := json.NewDecoder(&out)
		for dec.More() {
			var r LinesResponse
			require.NoError(t, dec.Decode(&r))
			got++
		}
		require.Equal(t, want, got, "answers for %q", in)
	})
}
