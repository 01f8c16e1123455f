package modelstub

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/agentoslab/agentlab/lab/modelstub/internal/jsongen"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// Chaos is the chaos model (lab.yaml model: {mode: chaos, seed: N}, a
// scenario's model: {chaos: {seed: N}}): each turn it calls tools the
// request offers with arguments generated from their schemas — valid,
// at the schema's edges, or invalid — or ends the turn with text. It
// answers a request from the seed and the request alone (the last user
// message, how many user and assistant turns came before, the offered
// tools), so one seed answers a replayed conversation the same way, and
// a prompt's answers do not change when other prompts of the sequence
// are left out (what shrinking relies on).
//
// A prompt that is a script document (script.Header) is answered by that
// script, so a scenario run under chaos can still drive a turn exactly.
type Chaos struct {
	Seed int64
	// MaxSteps bounds the tool-calling rounds of one prompt; default
	// DefaultChaosSteps.
	MaxSteps int
}

// DefaultChaosSteps is how many rounds of tool calls a chaos turn makes
// at most before it answers with text.
const DefaultChaosSteps = 3

// Respond is the chaos model's answer to req.
func (c *Chaos) Respond(req *model.Request) (script.Response, error) {
	if req == nil {
		req = &model.Request{}
	}
	if script.Inline(req) {
		return (*script.Script)(nil).Respond(req)
	}
	users, step, last := chaosTurn(req)
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%d\x00%s", users, step, last)
	r := rand.New(rand.NewPCG(uint64(c.Seed), h.Sum64()))

	tools := slices.Clone(req.Tools)
	slices.SortFunc(tools, func(a, b model.Tool) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	maxSteps := c.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultChaosSteps
	}
	if len(tools) == 0 || step >= maxSteps || (step > 0 && r.IntN(3) == 0) {
		text := fmt.Sprintf("chaos: turn %d ends after %d rounds", users, step)
		return script.Response{Events: []model.Event{{Kind: model.TextDelta, Text: text}}, Stop: model.StopEndTurn}, nil
	}
	var resp script.Response
	for i := range 1 + r.IntN(2) {
		t := tools[r.IntN(len(tools))]
		k := jsongen.Valid
		switch n := r.IntN(20); {
		case n >= 17:
			k = jsongen.Invalid
		case n >= 12:
			k = jsongen.Boundary
		}
		resp.Events = append(resp.Events, model.Event{Kind: model.ToolCallDone, Call: model.ToolCall{
			ID:        fmt.Sprintf("chaos_%d_%d_%d", users, step, i),
			Name:      t.Name,
			Arguments: jsongen.Generate(r, t.InputSchema, k),
		}})
	}
	resp.Stop = model.StopToolUse
	return resp, nil
}

// chaosTurn reads req: the user messages, the assistant messages after the
// last one, and its text.
func chaosTurn(req *model.Request) (users, step int, last string) {
	for _, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			users++
			step = 0
			last = m.Text
		case model.RoleAssistant:
			step++
		}
	}
	return users, step, last
}
