package callerchan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
)

// A tool call whose arguments are 100,002 characters long would make a
// tool_call update over the 65,536-char line limit, which the SDK must
// answer by closing the connection (spec §4.2). The runtime shows the
// call with the truncation marker instead: the turn ends normally on the
// same connection, the SDK reports the arguments as truncated with their
// real length, the tool got all of them, and the connection serves the
// next prompt.
func TestOversizeToolArgumentKeepsTheChannel(t *testing.T) {
	t.Parallel()
	rt, _ := benchRuntime(t)
	ctx := context.Background()
	conn, err := acpclient.Connect(ctx, &acpclient.Options{SocketName: rt.names.Caller()})
	require.NoError(t, err)
	defer conn.Close()
	s, err := conn.NewSession(ctx, acpclient.SessionOptions{})
	require.NoError(t, err)

	// An app's prompt is at most 16,000 chars, so the model builds the
	// long argument from a first call's result: 7 × 14,286 = 100,002.
	const part, times = 14286, 7
	script := "#!agentos-script\nsteps:\n  - toolCalls:\n      - mcp: [mcptest, test, echo]\n        arguments: {text: " +
		strings.Repeat("a", part) + "}\n  - toolCalls:\n      - mcp: [mcptest, test, echo]\n        arguments: {text: \"" +
		strings.Repeat("${result[0]}", times) + "\"}\nfinal: done\n"
	var calls []acpclient.ToolCall
	var done *acpclient.Done
	for ev, err := range s.Prompt(ctx, script, acpclient.PromptOptions{}) {
		require.NoError(t, err, "the prompt must end normally, not DISCONNECTED")
		switch e := ev.(type) {
		case acpclient.ToolCall:
			calls = append(calls, e)
		case acpclient.Done:
			done = &e
		}
	}
	require.NotNil(t, done)
	assert.Equal(t, "end_turn", done.StopReason)

	var long []acpclient.ToolCall
	for _, c := range calls {
		if c.ArgumentsTruncated {
			long = append(long, c)
		}
	}
	require.NotEmpty(t, long, "the long call is shown, marked truncated")
	last := long[len(long)-1]
	assert.Greater(t, last.ArgumentsChars, part*times, "the marker gives the whole length")
	assert.LessOrEqual(t, len(last.ArgumentsJSON), 2000, "only a preview is sent")
	assert.Equal(t, acpclient.ToolCompleted, last.Status)
	// echo answers its whole text: the tool got every character.
	assert.Contains(t, last.ResultJSON, fmt.Sprintf("the original has %d characters", part*times))
	assert.Zero(t, conn.Dropped(), "nothing had to be dropped")

	// The same connection still works.
	for ev, err := range s.Prompt(ctx, "again", acpclient.PromptOptions{}) {
		require.NoError(t, err)
		if d, ok := ev.(acpclient.Done); ok {
			assert.Equal(t, "end_turn", d.StopReason)
		}
	}
}
