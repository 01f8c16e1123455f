package acptestclient

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStreamMeter(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name   string
		chunks []string
		at     []int // ms after the prompt was sent
		want   StreamOut
	}{
		{"none", nil, nil, StreamOut{SHA256: digest("")}},
		{"one", []string{"ab"}, []int{7}, StreamOut{Chunks: 1, Chars: 2, MaxChunkChars: 2, FirstChunkMs: 7,
			SHA256: digest("ab")}},
		// Gaps 10, 10, 10, 1000: p50 is 10, p99 the outlier; 4 chunks after
		// the first over 1.03 s. CJK counts characters, not bytes.
		{"gaps", []string{"a", "中文", "b", "c", "d"}, []int{5, 15, 25, 35, 1035}, StreamOut{Chunks: 5, Chars: 6, MaxChunkChars: 2,
			FirstChunkMs: 5, GapP50Ms: 10, GapP99Ms: 1000, ChunksPerSec: 3.88, CharsPerSec: 5.83,
			SHA256: digest("a中文bcd")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newStreamMeter(t0)
			for i, c := range tc.chunks {
				m.text(ms(tc.at[i]), c)
			}
			got := m.result()
			assert.Equal(t, tc.want, got)
		})
	}
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
