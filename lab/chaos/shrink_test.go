package chaos

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// each turns a predicate on one candidate into a batch, counting runs.
func each(runs *int, fails func([]int) bool) func(context.Context, [][]int) ([]bool, error) {
	return func(_ context.Context, cands [][]int) ([]bool, error) {
		out := make([]bool, len(cands))
		for i, c := range cands {
			*runs++
			out[i] = fails(c)
		}
		return out, nil
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestShrinkSyntheticPredicates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		fails func([]int) bool
		want  []int
	}{
		{"one culprit", 40, func(s []int) bool { return slices.Contains(s, 17) }, []int{17}},
		{"a pair in order", 40, func(s []int) bool {
			i, j := slices.Index(s, 3), slices.Index(s, 31)
			return i >= 0 && j > i
		}, []int{3, 31}},
		{"three anywhere", 25, func(s []int) bool {
			return slices.Contains(s, 0) && slices.Contains(s, 12) && slices.Contains(s, 24)
		}, []int{0, 12, 24}},
		{"the whole is needed", 4, func(s []int) bool { return len(s) == 4 }, []int{0, 1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs int
			got, err := Shrink(context.Background(), seq(tc.n), each(&runs, tc.fails))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.True(t, tc.fails(got), "the result still fails")
			for i := range got {
				assert.False(t, tc.fails(slices.Delete(slices.Clone(got), i, i+1)), "1-minimal: without %d it passes", got[i])
			}
			t.Logf("%d runs", runs)
			assert.Less(t, runs, tc.n*tc.n, "fewer runs than trying every pair")
		})
	}
}

func TestShrinkStopsOnError(t *testing.T) {
	boom := errors.New("device gone")
	calls := 0
	got, err := Shrink(context.Background(), seq(16), func(_ context.Context, c [][]int) ([]bool, error) {
		calls++
		if calls == 2 {
			return nil, boom
		}
		out := make([]bool, len(c))
		for i := range c {
			out[i] = slices.Contains(c[i], 5)
		}
		return out, nil
	})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, seq(8), got, "the shortest failing sequence found before the error")
}
