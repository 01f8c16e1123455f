package acptestclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

// fakeClock is an admin socket that answers clock.show with now (Unix
// ms) and counts the questions; after answering the advanceAfter-th it
// advances now by advance, as the lab would while the plan waits.
type fakeClock struct {
	now, asked            atomic.Int64
	advanceAfter, advance int64
}

func (f *fakeClock) listen(t *testing.T) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "admin")
	ln, err := transport.Listen(name)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					var m struct {
						ID     any    `json:"id"`
						Method string `json:"method"`
					}
					if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method != "clock.show" {
						continue
					}
					b, _ := json.Marshal(map[string]any{"id": m.ID, "result": map[string]any{"kind": "virtual", "nowMs": f.now.Load()}})
					c.Write(append(b, '\n'))
					if f.asked.Add(1) == f.advanceAfter {
						f.now.Add(f.advance)
					}
				}
			}()
		}
	}()
	return name
}

func clockOps(t *testing.T, name, waitClock string) []acptestclient.Op {
	t.Helper()
	ops, err := acptestclient.ParsePlan([]string{`[{"op":"raw_connect","socket":"` + name + `","as":"adm"},` +
		`{"op":"raw","conn":"adm","as":"t0","send":{"id":1,"method":"clock.show"}},` + waitClock + `]`})
	require.NoError(t, err)
	return ops
}

// wait_clock ends when the runtime's clock (not this app's) is ms past
// the reference: a reading taken before the wait, so an advance made
// while the plan was still busy counts. A wait_clock that measured this
// app's clock would run into its timeout (the bug) and say moved false.
func TestWaitClockFollowsTheRuntimesClock(t *testing.T) {
	// Advanced once the plan asked twice (t0 and wait_clock's first).
	f := &fakeClock{advanceAfter: 2, advance: 301_000}
	f.now.Store(1_700_000_000_000)
	name := f.listen(t)
	ops := clockOps(t, name, `{"op":"wait_clock","conn":"adm","as":"w","since":"t0","ms":300000,"timeoutMs":60000}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := acptestclient.Run(ctx, acptestclient.Env{CallerSocket: name}, ops)
	b, _ := json.Marshal(out.R["w"])
	var w acptestclient.WaitClockOut
	require.NoError(t, json.Unmarshal(b, &w), "%s", b)
	assert.True(t, w.Moved, "%s", b)
	assert.Equal(t, int64(301_000), w.MovedMs)
	assert.Equal(t, "virtual", w.Kind)
	assert.Nil(t, w.Error)
}

// A clock that does not move ends the wait at its timeout, moved false.
func TestWaitClockTimesOut(t *testing.T) {
	f := &fakeClock{}
	f.now.Store(5_000)
	name := f.listen(t)
	ops := clockOps(t, name, `{"op":"wait_clock","conn":"adm","as":"w","ms":1000,"timeoutMs":300}`)
	out := acptestclient.Run(context.Background(), acptestclient.Env{CallerSocket: name}, ops)
	b, _ := json.Marshal(out.R["w"])
	var w acptestclient.WaitClockOut
	require.NoError(t, json.Unmarshal(b, &w))
	assert.False(t, w.Moved)
	assert.Zero(t, w.MovedMs)
}

func TestWaitClockPlanErrors(t *testing.T) {
	for _, tc := range []string{
		`[{"op":"wait_clock","conn":"adm"}]`,
		`[{"op":"wait_clock","conn":"adm","ms":-1}]`,
	} {
		_, err := acptestclient.ParsePlan([]string{tc})
		assert.ErrorIs(t, err, acptestclient.ErrPlan, tc)
	}
}
