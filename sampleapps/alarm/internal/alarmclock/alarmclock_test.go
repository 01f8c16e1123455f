package alarmclock

import (
	"os"
	"sync"
	"testing"
	"time"
)

func TestSetAndNext(t *testing.T) {
	t.Parallel()
	c := New(t.TempDir())
	now := time.Date(2026, 10, 12, 6, 0, 0, 0, time.UTC)
	if _, ok, err := c.Next(now); ok || err != nil {
		t.Fatalf("empty clock: ok=%v err=%v", ok, err)
	}
	must(t, c.Set("org.example.clock", []Entry{{ID: "a", FireAt: now.Add(30 * time.Minute)}}))
	must(t, c.Set("org.agentos.sample.alarm", []Entry{{ID: "1", FireAt: now.Add(time.Hour)}, {ID: "2", FireAt: now.Add(-time.Hour)}}))
	e, ok, err := c.Next(now)
	if err != nil || !ok || e.Package != "org.example.clock" {
		t.Fatalf("next = %+v %v %v", e, ok, err)
	}
	// Replacing a package's entries leaves the others alone.
	must(t, c.Set("org.example.clock", nil))
	e, ok, _ = c.Next(now)
	if !ok || e.Package != "org.agentos.sample.alarm" || e.ID != "1" {
		t.Fatalf("next = %+v", e)
	}
	all, _ := c.Entries()
	if len(all) != 2 {
		t.Fatalf("entries = %+v", all)
	}
	fi, err := os.Stat(c.Path())
	if err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
}

func TestSetWritesOnlyOnChange(t *testing.T) {
	t.Parallel()
	c := New(t.TempDir())
	at := time.Date(2026, 10, 12, 7, 0, 0, 0, time.UTC)
	must(t, c.Set("p", []Entry{{ID: "1", FireAt: at}}))
	fi1, _ := os.Stat(c.Path())
	must(t, os.Chtimes(c.Path(), at, at))
	must(t, c.Set("p", []Entry{{ID: "1", FireAt: at.In(time.FixedZone("x", 3600))}}))
	fi2, _ := os.Stat(c.Path())
	if !fi2.ModTime().Equal(at) || fi1.Size() != fi2.Size() {
		t.Fatal("an unchanged Set rewrote the file")
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := New(dir)
	if err := c.Set("", nil); err == nil {
		t.Fatal("empty package accepted")
	}
	if err := c.Set("p", make([]Entry, MaxEntriesPerPkg+1)); err == nil {
		t.Fatal("too many entries accepted")
	}
	must(t, os.WriteFile(c.Path(), []byte("{not json"), 0o644))
	if _, err := c.Entries(); err == nil {
		t.Fatal("corrupt file read without error")
	}
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	c := New(t.TempDir())
	at := time.Date(2026, 10, 12, 7, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkg := string(rune('a' + i))
			if err := c.Set(pkg, []Entry{{ID: "1", FireAt: at.Add(time.Duration(i) * time.Minute)}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	all, err := c.Entries()
	if err != nil || len(all) != 8 {
		t.Fatalf("entries = %d %v", len(all), err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
