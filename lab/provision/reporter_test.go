package provision

import (
	"bytes"
	"testing"
	"time"
)

func TestLineReporter(t *testing.T) {
	var b bytes.Buffer
	r := NewLineReporter(&b)
	r.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC) }
	r.Begin("s1", "module")
	r.End("s1", Step{Name: "module", Changed: true, Detail: "installed agentos 7", Duration: 1234 * time.Millisecond})
	r.End("s1", Step{Name: "apps", Err: "boom", Duration: time.Second})
	want := "03:04:05.006 s1 module   installed agentos 7 (1.234s)\n03:04:05.006 s1 apps     FAILED: boom (1s)\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestBarReporter: every bar finishes (done, failed, or never started),
// so Wait returns. (The bars draw only on a terminal.)
func TestBarReporter(t *testing.T) {
	var b bytes.Buffer
	r := NewBarReporter(&b, []string{"ok-1", "bad-2", "idle-3"}, len(StepNames))
	for _, s := range StepNames[:3] {
		r.Begin("ok-1", s)
		r.End("ok-1", Step{Name: s})
	}
	r.Done("ok-1")
	r.Begin("bad-2", "probe")
	r.End("bad-2", Step{Name: "probe", Err: "no root"})
	r.Done("bad-2")
	r.Done("idle-3")
	done := make(chan struct{})
	go func() { r.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
	}
}
