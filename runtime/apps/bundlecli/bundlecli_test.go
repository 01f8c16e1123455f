package bundlecli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func appDir(t *testing.T) string {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "bin", "x86_64"), 0o755)
	os.MkdirAll(filepath.Join(dir, "assets", "agent-plugin"), 0o755)
	os.WriteFile(filepath.Join(dir, "app.json"), []byte(`{"package":"org.example.cli","label":"CLI","versionCode":7,"versionName":"7.0","binary":"cli","services":[{"name":"S","kind":"mcp","server":"main"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "bin", "x86_64", "cli"), []byte("binary"), 0o755)
	os.WriteFile(filepath.Join(dir, "assets", "agent-plugin", "plugin.json"), []byte(`{}`), 0o644)
	return dir
}

func TestKeygenPackVerifySign(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	k1, k2 := filepath.Join(tmp, "k1.pem"), filepath.Join(tmp, "k2.pem")
	code, out, errs := run("keygen", "--out", k1)
	if code != ExitOK || !strings.HasPrefix(out, "signing digest ") || len(strings.TrimSpace(out)) != len("signing digest ")+64 {
		t.Fatalf("keygen: %d %q %q", code, out, errs)
	}
	if fi, _ := os.Stat(k1); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v", fi.Mode())
	}
	if code, _, errs := run("keygen", "--out", k1); code != ExitFailed || !strings.Contains(errs, "exists") {
		t.Fatalf("keygen over an existing key: %d %q", code, errs)
	}
	run("keygen", "--out", k2)

	dir := appDir(t)
	b1, b2 := filepath.Join(tmp, "a.agentapp"), filepath.Join(tmp, "b.agentapp")
	if code, out, errs := run("pack", "--dir", dir, "--key", k1, "--out", b1); code != ExitOK || !strings.HasPrefix(out, "org.example.cli 7 signed by ") {
		t.Fatalf("pack: %d %q %q", code, out, errs)
	}
	again := filepath.Join(tmp, "again.agentapp")
	run("pack", "--dir", dir, "--key", k1, "--out", again)
	x, _ := os.ReadFile(b1)
	y, _ := os.ReadFile(again)
	if !bytes.Equal(x, y) {
		t.Fatal("packing twice gave different bundles")
	}
	code, out, _ = run("verify", "--json", b1)
	var s1 Summary
	if code != ExitOK || json.Unmarshal([]byte(out), &s1) != nil || s1.Package != "org.example.cli" || s1.Files != 3 || s1.ABIs[0] != "x86_64" {
		t.Fatalf("verify: %d %s", code, out)
	}
	if code, out, _ := run("verify", b1); code != ExitOK || !strings.HasPrefix(out, `ok: org.example.cli "CLI" versionCode 7`) {
		t.Fatalf("verify text: %d %q", code, out)
	}
	// Re-signed: same content, another signer.
	if code, _, errs := run("sign", "--key", k2, "--out", b2, b1); code != ExitOK {
		t.Fatalf("sign: %q", errs)
	}
	_, out, _ = run("verify", "--json", b2)
	var s2 Summary
	json.Unmarshal([]byte(out), &s2)
	if s2.ContentDigest != s1.ContentDigest || s2.SigningDigest == s1.SigningDigest {
		t.Fatalf("re-signed: %+v vs %+v", s2, s1)
	}
	// A changed byte is refused with the reason.
	x[len(x)/2] ^= 0xff
	bad := filepath.Join(tmp, "bad.agentapp")
	os.WriteFile(bad, x, 0o644)
	if code, _, errs := run("verify", bad); code != ExitFailed || !strings.Contains(errs, "bundle: ") {
		t.Fatalf("tampered: %d %q", code, errs)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	key := filepath.Join(tmp, "k.pem")
	run("keygen", "--out", key)
	dir := appDir(t)
	os.Symlink("/etc/passwd", filepath.Join(dir, "assets", "link"))
	if code, _, errs := run("pack", "--dir", dir, "--key", key, "--out", filepath.Join(tmp, "x.agentapp")); code != ExitFailed || !strings.Contains(errs, `entry "assets/link": not a regular file`) {
		t.Fatalf("symlink: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(tmp, "x.agentapp")); !os.IsNotExist(err) {
		t.Fatal("a failed pack left its output")
	}
	os.Chmod(key, 0o644)
	if code, _, errs := run("pack", "--dir", appDir(t), "--key", key, "--out", filepath.Join(tmp, "y.agentapp")); code != ExitFailed || !strings.Contains(errs, "readable by group or others") {
		t.Fatalf("exposed key: %d %q", code, errs)
	}
	for _, args := range [][]string{{}, {"nope"}, {"pack"}, {"verify"}, {"keygen"}} {
		if code, _, _ := run(args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want usage", args, code)
		}
	}
}
