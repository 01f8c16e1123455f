package reports

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSuiteCounts(t *testing.T) {
	r := &Run{Scenarios: []Scenario{
		{Name: "a", Checks: []Check{
			{Name: "1", OK: true, Upstream: "s.py/c/one"},
			{Name: "2", Upstream: "s.py/c/two"}, // failed
			{Name: "3", Skipped: true, Upstream: "s.py/c/three"},
			{Name: "4", OK: true}, // maps to nothing
		}},
		{Name: "b", Checks: []Check{
			{Name: "1", OK: true, Upstream: "s.py/c/two"},          // a failure elsewhere wins
			{Name: "2", Skipped: true, Upstream: "s.py/c/one"},     // a pass elsewhere wins
			{Name: "3", OK: true, Upstream: "s.py/c/three"},        // held on another device kind
			{Name: "4", Skipped: true, Upstream: "t.py/d/skipped"}, // only skipped
		}},
	}}
	assert.Equal(t, []SuiteCount{
		{Suite: "s.py", Checks: 3, Passed: 2, Failed: 1},
		{Suite: "t.py", Checks: 1, Skipped: 1},
	}, SuiteCounts(r))
	assert.Empty(t, SuiteCounts(&Run{}))
}
