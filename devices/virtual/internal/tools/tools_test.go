//go:build linux

package tools

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseSu(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tests := []struct {
		method  string
		args    []string
		uid     int
		command *string
		argv    []string
		print   string
		wantErr bool
	}{
		{method: "magisk", args: nil, uid: 0},
		{method: "magisk", args: []string{"-c", "id"}, command: str("id")},
		{method: "magisk", args: []string{"-c", "id", "-u"}, command: str("id -u")},
		{method: "magisk", args: []string{"10123", "-c", "id"}, uid: 10123, command: str("id")},
		{method: "magisk", args: []string{"-c", "exit 9"}, command: str("exit 9")},
		{method: "magisk", args: []string{"shell", "id"}, uid: 2000, command: str("id")},
		{method: "magisk", args: []string{"-", "root", "--", "-x"}, command: str("-x")},
		{method: "magisk", args: []string{"--command=ls /data"}, command: str("ls /data")},
		{method: "magisk", args: []string{"-mm", "-p", "1000"}, uid: 1000},
		{method: "magisk", args: []string{"-v"}, print: "27.0:MAGISKSU\n"},
		{method: "magisk", args: []string{"-V"}, print: "27000\n"},
		{method: "kernelsu", args: []string{"-v"}, print: "1.0.5:KernelSU\n"},
		{method: "magisk", args: []string{"nobody-such"}, wantErr: true},
		{method: "magisk", args: []string{"-z"}, wantErr: true},
		{method: "adb-root", args: []string{"0", "id", "-u"}, argv: []string{"id", "-u"}},
		{method: "adb-root", args: []string{"shell"}, uid: 2000, argv: []string{}},
		{method: "adb-root", args: []string{"x"}, wantErr: true},
	}
	for _, tt := range tests {
		req, print, err := parseSu(tt.method, tt.args)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseSu(%s, %q) err = %v", tt.method, tt.args, err)
			continue
		}
		if err != nil {
			continue
		}
		if print != tt.print {
			t.Errorf("parseSu(%s, %q) prints %q, want %q", tt.method, tt.args, print, tt.print)
		}
		if print != "" {
			continue
		}
		if req.UID != tt.uid || !reflect.DeepEqual(req.Command, tt.command) || (tt.argv != nil && !reflect.DeepEqual(req.Argv, tt.argv)) {
			var got string
			if req.Command != nil {
				got = *req.Command
			}
			t.Errorf("parseSu(%s, %q) = uid %d command %q argv %q", tt.method, tt.args, req.UID, got, req.Argv)
		}
	}
}

func TestApplyPolicySQL(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "adb", "su_policy")
	steps := []struct {
		sql     string
		want    string
		wantErr bool
	}{
		{"REPLACE INTO policies (uid,policy,until,logging,notification) VALUES(10123,2,0,1,1)", "10123 allow\n", false},
		{"INSERT OR REPLACE INTO policies (uid, policy) VALUES (2000, 1);", "10123 allow\n2000 deny\n", false},
		{"replace into policies (policy,uid) values (2,2000)", "10123 allow\n2000 allow\n", false},
		{"DELETE FROM policies WHERE uid=10123", "2000 allow\n", false},
		{"SELECT * FROM policies", "2000 allow\n", true},
		{"REPLACE INTO policies (uid,policy) VALUES(1)", "2000 allow\n", true},
	}
	for _, st := range steps {
		err := applyPolicySQL(file, st.sql)
		if (err != nil) != st.wantErr {
			t.Fatalf("%q: err %v", st.sql, err)
		}
		b, _ := os.ReadFile(file)
		if string(b) != st.want {
			t.Fatalf("after %q: policy file %q, want %q", st.sql, b, st.want)
		}
	}
}
