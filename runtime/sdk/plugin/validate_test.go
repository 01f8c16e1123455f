package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With ValidateInput a call outside the tool's schema never reaches the
// handler and gets an error result naming the schema; without it the
// handler sees whatever the client sent (the sample apps parse their own).
func TestValidateInput(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`)
	var strictRuns, looseRuns atomic.Int32
	s := NewServer(Info{Name: "v"}, nil)
	s.MustAddTool(Tool{Name: "strict", InputSchema: schema, ValidateInput: true,
		Handler: func(context.Context, json.RawMessage) (*Result, error) { strictRuns.Add(1); return Text("ran"), nil }})
	s.MustAddTool(Tool{Name: "loose", InputSchema: schema,
		Handler: func(context.Context, json.RawMessage) (*Result, error) { looseRuns.Add(1); return Text("ran"), nil }})
	c := serve(t, s, nil)
	ctx := context.Background()
	tests := []struct {
		args string
		ok   bool
	}{
		{`{"n":2}`, true},
		{`{"n":2,"x":1}`, false},
		{`{}`, false},
		{`{"n":0}`, false},
		{`{"n":"2"}`, false},
	}
	for _, tc := range tests {
		r, err := c.CallTool(ctx, "strict", json.RawMessage(tc.args))
		require.NoError(t, err)
		assert.Equal(t, !tc.ok, r.IsError, "%s: %s", tc.args, r.Text)
		if !tc.ok {
			assert.True(t, strings.HasPrefix(r.Text, "The arguments of strict do not match its input schema"), r.Text)
		}
		r, err = c.CallTool(ctx, "loose", json.RawMessage(tc.args))
		require.NoError(t, err)
		assert.False(t, r.IsError, "loose %s", tc.args)
	}
	assert.EqualValues(t, 1, strictRuns.Load(), "only the valid call ran")
	assert.EqualValues(t, len(tests), looseRuns.Load())

	// A schema that cannot be resolved is refused when the tool is added.
	err := s.AddTool(Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`),
		ValidateInput: true, Handler: func(context.Context, json.RawMessage) (*Result, error) { return nil, nil }})
	assert.True(t, errors.Is(err, ErrSchema), "%v", err)
}
