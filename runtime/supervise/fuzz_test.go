package supervise

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzHeartbeat: whatever the runtime writes, reading it never panics,
// and an accepted heartbeat has a non-negative task count.
func FuzzHeartbeat(f *testing.F) {
	f.Add([]byte("pid=1\ntasks=2\nat=3\nstate=busy\n"))
	f.Add([]byte("tasks=-1\n"))
	f.Add([]byte("tasks=99999999999999999999\n"))
	f.Add([]byte("=\n==\ntasks\n"))
	dir := f.TempDir()
	p := filepath.Join(dir, "heartbeat")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		hb, err := ReadHeartbeat(p)
		if err == nil && hb.Tasks < 0 {
			t.Fatalf("negative tasks accepted: %+v", hb)
		}
	})
}
