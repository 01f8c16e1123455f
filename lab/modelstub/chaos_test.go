package modelstub

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/model"
)

func chaosReq(text string, step int) *model.Request {
	r := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: text}}}
	for range step {
		r.Messages = append(r.Messages, model.Message{Role: model.RoleAssistant, Text: "x"}, model.Message{Role: model.RoleTool, Text: "{}"})
	}
	for _, n := range []string{"mcp__notes__notes__note_create", "mcp__mcptest__test__echo", "read_skill"} {
		r.Tools = append(r.Tools, model.Tool{Name: n, InputSchema: json.RawMessage(
			`{"type":"object","properties":{"text":{"type":"string","maxLength":8}},"required":["text"]}`)})
	}
	return r
}

func calls(evs []model.Event) []model.ToolCall {
	var out []model.ToolCall
	for _, e := range evs {
		if e.Kind == model.ToolCallDone {
			out = append(out, e.Call)
		}
	}
	return out
}

func TestChaosAnswersFromTheOfferedTools(t *testing.T) {
	offered := map[string]bool{}
	for _, tl := range chaosReq("", 0).Tools {
		offered[tl.Name] = true
	}
	called := map[string]bool{}
	for seed := range int64(40) {
		c := &Chaos{Seed: seed}
		resp, err := c.Respond(chaosReq("chaos prompt 1", 0))
		require.NoError(t, err)
		cs := calls(resp.Events)
		require.NotEmpty(t, cs, "seed %d: the first round of a turn with tools calls one", seed)
		assert.Equal(t, model.StopToolUse, resp.Stop)
		for _, call := range cs {
			assert.True(t, offered[call.Name], "seed %d called %s, which was not offered", seed, call.Name)
			assert.True(t, json.Valid(call.Arguments))
			called[call.Name] = true
		}
		end, err := c.Respond(chaosReq("chaos prompt 1", DefaultChaosSteps))
		require.NoError(t, err)
		assert.Empty(t, calls(end.Events), "a turn ends after its rounds")
		assert.Equal(t, model.StopEndTurn, end.Stop)
	}
	assert.Len(t, called, 3, "the seeds reach every offered tool")
}

func TestChaosIsDeterministicPerSeedAndPrompt(t *testing.T) {
	a, _ := (&Chaos{Seed: 5}).Respond(chaosReq("chaos prompt 2", 1))
	b, _ := (&Chaos{Seed: 5}).Respond(chaosReq("chaos prompt 2", 1))
	assert.Equal(t, a, b, "same seed, same request: same answer")
	differs := false
	for seed := range int64(10) {
		c, _ := (&Chaos{Seed: 5 + seed + 1}).Respond(chaosReq("chaos prompt 2", 1))
		o, _ := (&Chaos{Seed: 5}).Respond(chaosReq("chaos prompt 3", 1))
		differs = differs || !assert.ObjectsAreEqual(a, c) || !assert.ObjectsAreEqual(a, o)
	}
	assert.True(t, differs, "other seeds and prompts answer otherwise")
}

func TestChaosInlineScriptStillAnswers(t *testing.T) {
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "#!agentos-script\nsteps:\n  - text: exact\n"}}}
	resp, err := (&Chaos{Seed: 1}).Respond(req)
	require.NoError(t, err)
	require.Len(t, resp.Events, 1)
	assert.Equal(t, "exact", resp.Events[0].Text)
}

func TestChaosOverHTTP(t *testing.T) {
	forEachClient(t, func(t *testing.T, s *Stub, c client) {
		chaosTok, scriptTok := NewToken(), NewToken()
		require.NoError(t, s.BindChaos(chaosTok, &Chaos{Seed: 3}))
		require.NoError(t, s.Bind(scriptTok, mustScript(t, "steps:\n  - text: scripted\n")))
		want, err := (&Chaos{Seed: 3}).Respond(chaosReq("go", 0))
		require.NoError(t, err)
		evs, err := call(context.Background(), c.new(s, chaosTok, noRetry), chaosReq("go", 0))
		require.NoError(t, err)
		got := calls(evs)
		require.Len(t, got, len(calls(want.Events)))
		for i, w := range calls(want.Events) {
			assert.Equal(t, w.Name, got[i].Name)
			assert.JSONEq(t, string(w.Arguments), string(got[i].Arguments))
		}
		evs, err = call(context.Background(), c.new(s, scriptTok, noRetry), chaosReq("go", 0))
		require.NoError(t, err)
		assert.Equal(t, "scripted", text(evs, model.TextDelta), "a scripted token keeps its script")
		reqs, _ := s.Requests(chaosTok)
		assert.Len(t, reqs, 1, "chaos requests are recorded like any")
	})
}

func TestChaosStubOptionAnswersUnscriptedTokens(t *testing.T) {
	s, err := Start(&Options{Chaos: &Chaos{Seed: 9}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	tok := NewToken()
	require.NoError(t, s.Bind(tok, nil))
	evs, err := call(context.Background(), clients[0].new(s, tok, noRetry), chaosReq("go", 0))
	require.NoError(t, err)
	assert.NotEmpty(t, calls(evs), "with Options.Chaos a token bound to no script is the chaos model's")
}
