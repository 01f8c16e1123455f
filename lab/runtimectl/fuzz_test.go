package runtimectl

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// FuzzDecode: whatever ctl prints and exits with, decode classifies it:
// JSON on stdout is the answer (a refusal is an *errcode.Error), and
// without JSON the exit code decides.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":"1"}`), []byte(""), 0)
	f.Add([]byte(`{"error":{"code":-32602,"message":"x: y","data":{"agentosCode":"invalid_params"}}}`), []byte(""), 1)
	f.Add([]byte(""), []byte("not reachable"), 3)
	f.Add([]byte("garbage"), []byte("sh: not found"), 127)
	f.Add([]byte("[1,2]"), []byte(""), 5)
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, code int) {
		var out any
		err := decode("x y", devices.Result{Stdout: stdout, Stderr: stderr, ExitCode: code}, &out)
		trimmed := bytes.TrimSpace(stdout)
		if len(trimmed) > 0 && json.Valid(trimmed) {
			var probe struct {
				Error *errcode.WireError `json:"error"`
			}
			var e *errcode.Error
			refusal := trimmed[0] == '{' && json.Unmarshal(trimmed, &probe) == nil && probe.Error != nil && probe.Error.Data.AgentosCode != ""
			if refusal != errors.As(err, &e) {
				t.Fatalf("refusal %v, err %v", refusal, err)
			}
			var ce *CtlError
			if !refusal && err != nil && (errors.As(err, &e) || errors.As(err, &ce) || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNotInstalled)) {
				// A JSON answer is the answer, whatever the exit code
				// (app run exits with the app's); at most it does not
				// decode into the result type.
				t.Fatalf("a JSON answer gave %v", err)
			}
			return
		}
		var ce *CtlError
		switch {
		case code == 0:
			if err == nil {
				t.Fatal("no JSON and no error")
			}
		case code == 3:
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("exit 3: %v", err)
			}
		case code == 126 || code == 127:
			if !errors.Is(err, ErrNotInstalled) {
				t.Fatalf("exit %d: %v", code, err)
			}
		default:
			if !errors.As(err, &ce) || ce.ExitCode != code {
				t.Fatalf("exit %d: %v", code, err)
			}
		}
	})
}
