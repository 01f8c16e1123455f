package steps

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// fixedTimer is a Timer that says time passed without waiting.
type fixedTimer struct{ got time.Duration }

func (f *fixedTimer) Wait(_ context.Context, _ *Target, d time.Duration) (string, error) {
	f.got = d
	return "advanced the device's clock by " + d.String(), nil
}

const waitScenario = "name: t\nsteps:\n  - wait: {for: 5m}\n    save: w\n  - wait: {for: 90s}\n" +
	"checks:\n  - {name: waited, saved: w, path: .waitedMs, eq: 300000}\n"

// TestTimedWaitByClock: wait: {for: D} advances a virtual clock and
// takes no time for it, and really waits on a runtime that has the real
// clock (a release build says "real"; an older one does not know the
// verb). Time is synctest's, so "took no time" is exact: a timed wait
// that slept on a virtual device (the bug) makes elapsed ≥ 6m30s.
func TestTimedWaitByClock(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     string
		fail     error
		virtual  bool
		evidence string
	}{
		{name: "virtual", kind: "virtual", virtual: true, evidence: "advanced virtual time 5m0s"},
		{name: "release", kind: "real", evidence: "waited 5m0s in real time"},
		{name: "older runtime", fail: &runtimectl.CtlError{Verb: "clock show", ExitCode: 2}, evidence: "waited 5m0s in real time"},
		{name: "refused", fail: errcode.New(errcode.Unsupported, "no"), evidence: "waited 5m0s in real time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := newRuntime()
				rt.clockKind = tc.kind
				if tc.fail != nil {
					rt.fail["clock show"] = tc.fail
				}
				e, _ := env(t, rt, nil)
				start := time.Now()
				r := Run(context.Background(), parse(t, waitScenario), e)
				elapsed := time.Since(start)
				require.NoError(t, r.Err)
				require.Nil(t, r.LabFault)
				assert.Equal(t, "waited=true", checks(r))
				require.Len(t, r.Steps, 2)
				assert.Equal(t, tc.evidence, r.Steps[0].Detail)
				show := 0
				for _, c := range rt.verbs() {
					if c == "clock show" {
						show++
					}
				}
				assert.Equal(t, 1, show, "the clock is detected once per attempt")
				if tc.virtual {
					assert.Equal(t, 6*time.Minute+30*time.Second, rt.advanced)
					assert.Equal(t, "advanced virtual time 1m30s", r.Steps[1].Detail)
					assert.Less(t, elapsed, time.Minute, "a virtual wait must not sleep")
				} else {
					assert.Zero(t, rt.advanced)
					assert.GreaterOrEqual(t, elapsed, 6*time.Minute+30*time.Second)
				}
			})
		})
	}
}

// A device that is gone while the lab asks for its clock loses the
// attempt to the lab; it is not taken for a real clock.
func TestTimedWaitDeviceGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.fail["clock show"] = devices.ErrDeviceGone
		e, _ := env(t, rt, nil)
		start := time.Now()
		r := Run(context.Background(), parse(t, waitScenario), e)
		require.Error(t, r.LabFault)
		assert.True(t, errors.Is(r.LabFault, devices.ErrDeviceGone))
		assert.Less(t, time.Since(start), time.Minute)
	})
}

// A failed advance fails the step instead of passing for a wait.
func TestTimedWaitAdvanceFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.clockKind = "virtual"
		rt.fail["clock advance"] = errcode.New(errcode.InvalidParams, "too far")
		e, _ := env(t, rt, nil)
		r := Run(context.Background(), parse(t, waitScenario), e)
		require.Error(t, r.Err)
		assert.ErrorIs(t, r.Err, errcode.InvalidParams)
	})
}

// An Env's Timer overrides the device's clock.
func TestTimedWaitEnvTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		e, _ := env(t, rt, nil)
		ft := &fixedTimer{}
		e.Timer = ft
		r := Run(context.Background(), parse(t, waitScenario), e)
		require.NoError(t, r.Err)
		assert.Equal(t, 90*time.Second, ft.got)
		assert.Equal(t, "advanced the device's clock by 5m0s", r.Steps[0].Detail)
		assert.NotContains(t, rt.verbs(), "clock show")
	})
}
