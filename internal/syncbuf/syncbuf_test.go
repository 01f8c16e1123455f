package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: whole writes from many goroutines all arrive,
// none interleaved inside another, while a reader reads (run with -race).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	got := b.String()
	if n := strings.Count(got, "line\n"); n != 800 || len(got) != 800*len("line\n") {
		t.Fatalf("%d whole lines in %d bytes, want 800", n, len(got))
	}
}
