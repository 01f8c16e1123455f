package durable

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func parseObject(b []byte) error {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return errors.New("not an object")
	}
	return nil
}

func TestLoadSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := File{Path: filepath.Join(dir, "sub", "p.json"), Backup: filepath.Join(dir, "sub", "p.backup.json")}
	if src, err := f.Load(parseObject); src != None || err != nil {
		t.Fatalf("empty dir: %v %v", src, err)
	}
	if err := f.Save([]byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(f.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("main file: %v %v", fi, err)
	}
	if src, err := f.Load(parseObject); src != FromFile || err != nil {
		t.Fatalf("after save: %v %v", src, err)
	}
	os.WriteFile(f.Path, []byte("garbage"), 0o600)
	var got []byte
	src, err := f.Load(func(b []byte) error { got = b; return parseObject(b) })
	if src != FromBackup || err != nil || string(got) != `{"v":1}` {
		t.Fatalf("main broken: %v %v %q", src, err, got)
	}
	if b, _ := os.ReadFile(f.Path + ".corrupt"); string(b) != "garbage" {
		t.Fatalf("corrupt copy kept: %q", b)
	}
	os.WriteFile(f.Path, []byte("garbage"), 0o600)
	os.WriteFile(f.Backup, []byte("[]"), 0o600)
	if src, err := f.Load(parseObject); src != Unreadable || err == nil {
		t.Fatalf("both broken: %v %v", src, err)
	}
	os.Remove(f.Path)
	os.Remove(f.Backup)
	os.WriteFile(f.Backup, []byte(`{"v":2}`), 0o600)
	if src, _ := f.Load(parseObject); src != FromBackup {
		t.Fatalf("only a backup: %v", src)
	}
}
