package ids

import (
	"strings"
	"testing"
	"time"
)

func TestShapes(t *testing.T) {
	tests := []struct {
		prefix string
		valid  func(string) bool
	}{
		{Session, ValidSession},
		{Task, ValidTask},
		{Request, ValidRequest},
	}
	for _, tt := range tests {
		id := New(tt.prefix)
		if !tt.valid(id) {
			t.Errorf("%s: %q does not match its own pattern", tt.prefix, id)
		}
		if len(id) != len(tt.prefix)+1+26 {
			t.Errorf("%s: length %d", id, len(id))
		}
	}
	for _, bad := range []string{"", "ses_", "ses_0123456789ABCDEFGHJKMNPQR", "ses_0123456789abcdefghjkmnpqrs", "ses_0123456789ABCDEFGHJKMNPQRI", "tsk_01J0000000000000000000000U"} {
		if ValidSession(bad) {
			t.Errorf("ValidSession(%q) = true", bad)
		}
	}
}

func TestTimestampFirst(t *testing.T) {
	at := time.UnixMilli(1_790_000_000_123)
	id := NewAt(Session, at)
	got, ok := Time(id)
	if !ok || !got.Equal(at) {
		t.Fatalf("Time(%q) = %v, %v; want %v", id, got, ok, at)
	}
	// Later ids sort after earlier ones: the first 10 chars are the time.
	later := NewAt(Session, at.Add(time.Millisecond))
	if strings.Compare(id[:14], later[:14]) >= 0 {
		t.Errorf("%s does not sort before %s", id, later)
	}
}

func TestUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		id := New(Task)
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestPairing(t *testing.T) {
	p := Pairing()
	if len(p) != 15 || !strings.HasPrefix(p, "dp_") || strings.ToLower(p) != p {
		t.Fatalf("pairing id %q", p)
	}
}
