package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCoalescer(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		at      int // ms
		thought bool
		text    string
		flush   bool // flush(at) instead of add
		want    string
	}
	show := func(fl []flushed) string {
		var out []string
		for _, f := range fl {
			k := "m"
			if f.thought {
				k = "t"
			}
			out = append(out, k+":"+f.text)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first delta goes at once, the rest waits for the window", []step{
			{at: 0, text: "a", want: "m:a"},
			{at: 5, text: "b", want: ""},
			{at: 10, text: "c", want: ""},
			{at: 32, flush: true, want: "m:bc"},
			{at: 70, text: "d", want: "m:d"},
		}},
		{"a switch to thought writes pending text first", []step{
			{at: 0, text: "a", want: "m:a"},
			{at: 1, text: "b", want: ""},
			{at: 2, thought: true, text: "x", want: "m:b"},
			{at: 3, thought: true, text: "y", want: ""},
			{at: 4, flush: true, want: "t:xy"},
		}},
		{"max chars force a write", []step{
			{at: 0, text: "a", want: "m:a"},
			{at: 1, text: strings.Repeat("b", 10), want: "m:bbbbbbbb"},
			{at: 2, flush: true, want: "m:bb"},
		}},
	}
	for _, tc := range tests {
		c := coalescer{window: 32 * time.Millisecond, max: 8}
		for i, s := range tc.steps {
			var got []flushed
			if s.flush {
				got = c.flush(ms(s.at))
			} else {
				got = c.add(ms(s.at), s.thought, s.text)
			}
			if show(got) != s.want {
				t.Errorf("%s: step %d: got %q, want %q", tc.name, i, show(got), s.want)
			}
		}
	}
	c := coalescer{window: 32 * time.Millisecond, max: 8}
	c.add(ms(0), false, "a")
	c.add(ms(1), false, "b")
	if d, ok := c.deadline(); !ok || !d.Equal(ms(32)) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	c.flush(ms(40))
	if _, ok := c.deadline(); ok {
		t.Fatal("deadline with nothing pending")
	}
}

func TestCoalescerNeverSplitsSurrogates(t *testing.T) {
	t.Parallel()
	c := coalescer{window: time.Hour, max: 4}
	var all []flushed
	all = append(all, c.add(time.Unix(0, 0), false, "a")...)
	all = append(all, c.add(time.Unix(0, 1), false, "bc𝄞𝄞d")...)
	all = append(all, c.flush(time.Unix(0, 2))...)
	var got []string
	for _, f := range all {
		got = append(got, f.text)
	}
	if fmt.Sprint(got) != "[a bc𝄞 𝄞d]" {
		t.Fatalf("pieces %q", got)
	}
}
