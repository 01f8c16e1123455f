package sampletest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// RunBinary runs an app's binary with args and env added to the test's
// environment, under cred (nil: as the test), as the launcher and the
// lab do. It returns the exit code and the JSON object the binary
// printed: its stdout must be that one object on one line.
func RunBinary(t testing.TB, bin string, cred *syscall.Credential, env []string, args ...string) (int, map[string]any) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Count(strings.TrimSpace(stdout.String()), "\n") != 0 {
		t.Fatalf("%v: more than one line of output: %q", args, stdout.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v: stdout %q is not one JSON object: %v (stderr %q)", args, stdout.String(), err, stderr.String())
	}
	return code, doc
}
