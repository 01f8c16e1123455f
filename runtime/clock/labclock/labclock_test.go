package labclock

import (
	"bytes"
	"encoding/json"
	"go/build"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/clock/internal/virtual"
)

const tag = "agentos_labclock"

// The tag decides which of this package's files compile, and only the
// tagged build links the virtual clock: a release agentosd has no code
// that could move its time.
func TestTagSelectsFiles(t *testing.T) {
	for _, tc := range []struct {
		tags       []string
		want, skip string
		virtual    bool
	}{
		{nil, "off.go", "on.go", false},
		{[]string{tag}, "on.go", "off.go", true},
	} {
		ctx := build.Default
		ctx.BuildTags = tc.tags
		pkg, err := ctx.ImportDir(".", 0)
		require.NoError(t, err)
		assert.Contains(t, pkg.GoFiles, tc.want, "tags %v", tc.tags)
		assert.NotContains(t, pkg.GoFiles, tc.skip, "tags %v", tc.tags)
		assert.Equal(t, tc.virtual, slices.Contains(pkg.Imports, "github.com/agentoslab/agentlab/runtime/clock/internal/virtual"), "tags %v", tc.tags)
	}
}

func TestFileNameIsTheVirtualClocks(t *testing.T) {
	assert.Equal(t, virtual.FileName, FileName)
}

func TestAdvanceParams(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int64
		ok   bool
	}{
		{[]string{"5m"}, 300000, true},
		{[]string{"90s"}, 90000, true},
		{[]string{"1ms"}, 1, true},
		{[]string{"1h30m"}, 5400000, true},
		{[]string{"0s"}, 0, false},
		{[]string{"-5m"}, 0, false},
		{[]string{"999us"}, 0, false},
		{[]string{"400d"}, 0, false},
		{[]string{"10000h"}, 0, false}, // over MaxAdvance
		{[]string{"5"}, 0, false},
		{nil, 0, false},
		{[]string{"5m", "1m"}, 0, false},
	} {
		p, err := advanceParams(tc.args, nil)
		if !tc.ok {
			var ue *admin.UsageError
			assert.ErrorAs(t, err, &ue, "%v", tc.args)
			continue
		}
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, AdvanceParams{Ms: tc.want}, p, "%v", tc.args)
	}
}

func TestPrintInfo(t *testing.T) {
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Kind: KindVirtual, NowMs: time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC).UnixMilli(), OffsetMs: 300000},
			"clock: virtual, now 2026-03-01T12:05:00Z, 5m0s ahead of the real clock\n"},
		{Info{Kind: KindReal, NowMs: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()},
			"clock: real (this build has the real clock only), now 2026-03-01T12:00:00Z\n"},
	} {
		raw, err := json.Marshal(tc.in)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, printInfo(&b, raw))
		assert.Equal(t, tc.want, b.String())
	}
}

// Both methods exist in every build, for the owner's classes only.
func TestAdminMethods(t *testing.T) {
	var names []string
	for _, m := range AdminMethods(&Owner{}) {
		names = append(names, m.Name)
		assert.Equal(t, admin.Owner, m.Perm, m.Name)
	}
	assert.Equal(t, []string{"clock.advance", "clock.show"}, names)
}

func TestAdvanceOutOfRange(t *testing.T) {
	o, err := Open(t.TempDir())
	require.NoError(t, err)
	for _, d := range []time.Duration{0, -time.Second, MaxAdvance + time.Millisecond} {
		_, err := o.Advance(d)
		require.Error(t, err, "%s", d)
	}
	assert.Zero(t, o.Info().OffsetMs)
}
