package chaos

import (
	"context"
	"slices"
)

// Shrink finds a short subsequence of seq that still fails: delta
// debugging (Zeller's ddmin) over the actions, keeping their order. fails
// reruns one candidate — deterministically, so a candidate that fails
// once fails every time — and reports whether it failed the same way;
// batch runs several candidates at once (on several devices) and
// reports each one's result. The result is 1-minimal: removing any one
// of its actions makes it pass. An error of batch ends the shrinking
// with the shortest failing sequence found so far.
func Shrink[T any](ctx context.Context, seq []T, batch func(context.Context, [][]T) ([]bool, error)) ([]T, error) {
	n := 2
	for len(seq) >= 2 {
		if err := ctx.Err(); err != nil {
			return seq, err
		}
		parts := split(seq, n)
		// Subsets first, then complements, each round in one batch.
		var cands [][]T
		for _, p := range parts {
			cands = append(cands, p)
		}
		if n > 2 {
			for i := range parts {
				cands = append(cands, complement(parts, i))
			}
		}
		res, err := batch(ctx, cands)
		if err != nil {
			return seq, err
		}
		i := slices.Index(res, true)
		switch {
		case i >= 0 && i < len(parts):
			seq, n = cands[i], 2
		case i >= len(parts):
			seq, n = cands[i], max(n-1, 2)
		case n >= len(seq):
			return seq, nil
		default:
			n = min(2*n, len(seq))
		}
	}
	return seq, nil
}

// split cuts seq into n parts of near equal length.
func split[T any](seq []T, n int) [][]T {
	out := make([][]T, 0, n)
	start := 0
	for i := range n {
		end := start + (len(seq)-start)/(n-i)
		out = append(out, slices.Clone(seq[start:end]))
		start = end
	}
	return out
}

// complement is every part but the i-th, in order.
func complement[T any](parts [][]T, i int) []T {
	var out []T
	for j, p := range parts {
		if j != i {
			out = append(out, p...)
		}
	}
	return out
}
