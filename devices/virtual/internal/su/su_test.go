//go:build linux

package su

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
	"github.com/agentoslab/agentlab/internal/testenv"
)

// TestDaemon runs the daemon in this process's network namespace (its
// abstract socket name is fixed, so the subtests run one after another)
// and checks identity both ways: the target uid is real, and the caller's
// uid comes from SO_PEERCRED.
func TestDaemon(t *testing.T) {
	testenv.NeedRoot(t)
	r := proc.NewReaper(false)
	defer r.Close()
	d, err := Serve(r, "/bin/sh", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Skipf("su socket busy in this namespace: %v", err)
	}
	defer d.Close()
	str := func(s string) *string { return &s }
	tests := []struct {
		name     string
		caller   int
		req      Request
		wantOut  string
		wantCode int
		wantErr  string
	}{
		{"root to app uid", 0, Request{UID: 10123, Command: str("id -u; id -g")}, "10123\n10123\n", 0, ""},
		{"shell to root", 2000, Request{UID: 0, Command: str("id -u")}, "0\n", 0, ""},
		{"exit code", 2000, Request{Command: str("exit 7")}, "", 7, ""},
		{"argv", 0, Request{UID: 2000, Argv: []string{"id", "-u"}, Env: []string{"PATH=/usr/bin:/bin"}}, "2000\n", 0, ""},
		{"app denied", 10123, Request{Command: str("id")}, "", 1, "Permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer outR.Close()
			var code int
			var callErr error
			err = proc.RunAs(tt.caller, tt.caller, func() error {
				code, callErr = Call(context.Background(), &tt.req, [3]*os.File{os.Stdin, outW, outW})
				return nil
			})
			outW.Close()
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(outR)
			if code != tt.wantCode || string(out) != tt.wantOut {
				t.Errorf("code %d out %q, want %d %q", code, out, tt.wantCode, tt.wantOut)
			}
			if (callErr != nil) != (tt.wantErr != "") || (callErr != nil && !strings.Contains(callErr.Error(), tt.wantErr)) {
				t.Errorf("err %v, want %q", callErr, tt.wantErr)
			}
		})
	}
}
