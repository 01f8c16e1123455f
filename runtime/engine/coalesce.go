package engine

import (
	"time"

	"github.com/agentoslab/agentlab/runtime/internal/chars"
)

// coalescer batches model text deltas before they are logged (spec §2.6):
// the first delta after a quiet window is written at once (so the first
// words reach the client without delay), later ones are held until the
// window since the last write has passed or max chars are pending, and a
// change between text and thought, a tool call or the end of the stream
// writes what is pending. Pieces are at most max chars and never split a
// surrogate pair. It is a pure value: the caller supplies the time.
type coalescer struct {
	window time.Duration
	max    int

	pending   string
	thought   bool
	lastWrite time.Time
}

// flushed is one piece to log.
type flushed struct {
	text    string
	thought bool
}

// add takes a delta at now and returns what must be written now.
func (c *coalescer) add(now time.Time, thought bool, text string) []flushed {
	if text == "" {
		return nil
	}
	var out []flushed
	if c.pending != "" && c.thought != thought {
		out = c.flush(now)
	}
	c.pending += text
	c.thought = thought
	if chars.Len(c.pending) >= c.max {
		parts := chars.Split(c.pending, c.max)
		last := parts[len(parts)-1]
		if chars.Len(last) < c.max {
			parts = parts[:len(parts)-1]
			c.pending = last
		} else {
			c.pending = ""
		}
		for _, p := range parts {
			out = append(out, flushed{p, thought})
		}
		c.lastWrite = now
		return out
	}
	if c.lastWrite.IsZero() || now.Sub(c.lastWrite) >= c.window {
		out = append(out, c.flush(now)...)
	}
	return out
}

// deadline is when pending text must be written, if any is pending.
func (c *coalescer) deadline() (time.Time, bool) {
	if c.pending == "" {
		return time.Time{}, false
	}
	return c.lastWrite.Add(c.window), true
}

// flush returns everything pending.
func (c *coalescer) flush(now time.Time) []flushed {
	if c.pending == "" {
		return nil
	}
	var out []flushed
	for _, p := range chars.Split(c.pending, c.max) {
		out = append(out, flushed{p, c.thought})
	}
	c.pending = ""
	c.lastWrite = now
	return out
}
