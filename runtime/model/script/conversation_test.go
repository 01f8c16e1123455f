package script

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/httpfail"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// conversationFile is a whole conversation to replay: a script, the
// tools offered, canned tool results and the user's prompts.
type conversationFile struct {
	Script  string            `yaml:"script"`
	Tools   []string          `yaml:"tools"`
	Results map[string]string `yaml:"results"`
	Turns   []string          `yaml:"turns"`
}

// TestConversations replays each testdata/conversations/*.yaml the way
// the runtime would (tool calls answered from the canned results, tools
// not offered rejected with tool_not_in_catalog) and compares the
// transcript with its .golden file. Run with -update to rewrite them.
func TestConversations(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "conversations", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversations: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var cf conversationFile
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			dec.KnownFields(true)
			if err := dec.Decode(&cf); err != nil {
				t.Fatal(err)
			}
			got := replay(t, cf)
			golden := strings.TrimSuffix(path, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the replay:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

func replay(t *testing.T, cf conversationFile) string {
	s := mustParse(t, cf.Script)
	offered := map[string]bool{}
	req := &model.Request{}
	for _, name := range cf.Tools {
		offered[name] = true
		req.Tools = append(req.Tools, model.Tool{Name: name})
	}
	var b strings.Builder
	for _, prompt := range cf.Turns {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Text: prompt})
		fmt.Fprintf(&b, "user: %s\n", strconv.Quote(prompt))
		for call := 0; ; call++ {
			if call == 10 {
				t.Fatal("more than 10 model calls in one turn")
			}
			r, err := s.Respond(req)
			fmt.Fprintf(&b, "model[%d]:", call)
			if err != nil {
				fmt.Fprintf(&b, " (script error)")
			}
			if failed := describeFailure(r); failed != "" {
				fmt.Fprintf(&b, " %s\n", failed)
				break
			}
			msg := model.Message{Role: model.RoleAssistant}
			for _, ev := range r.Events {
				switch ev.Kind {
				case model.TextDelta:
					fmt.Fprintf(&b, " text %s", strconv.Quote(ev.Text))
					msg.Text += ev.Text
				case model.ThinkingDelta:
					fmt.Fprintf(&b, " thinking %s", strconv.Quote(ev.Text))
				case model.ToolCallDone:
					fmt.Fprintf(&b, "\n  call %s %s %s", ev.Call.ID, ev.Call.Name, ev.Call.Arguments)
					msg.ToolCalls = append(msg.ToolCalls, ev.Call)
				}
			}
			fmt.Fprintf(&b, "\n  stop %s\n", r.Stop)
			req.Messages = append(req.Messages, msg)
			if len(msg.ToolCalls) == 0 {
				break
			}
			for _, c := range msg.ToolCalls {
				res := model.Message{Role: model.RoleTool, ToolCallID: c.ID, Text: `{"ok": true}`}
				switch {
				case !offered[c.Name]:
					res.Text, res.IsError = errcode.ToolText(errcode.ToolNotInCatalog, "Tool "+c.Name+" is not available."), true
				case cf.Results[c.Name] != "":
					res.Text = cf.Results[c.Name]
					res.IsError = strings.HasPrefix(res.Text, "[agentos:")
				}
				fmt.Fprintf(&b, "tool %s: %s\n", c.ID, res.Text)
				req.Messages = append(req.Messages, res)
			}
		}
	}
	return b.String()
}

// describeFailure describes a response that ends the turn without an answer, as
// the scripted provider would report it.
func describeFailure(r Response) string {
	var e *errcode.Error
	switch {
	case r.Hang:
		return "hangs without headers"
	case r.Status != 0:
		e = httpfail.StatusError(r.Status, r.RetryAfter)
	case r.End == EndCut:
		e = httpfail.Map(httpfail.Failure{AfterHeaders: true})
	case r.End == EndStall:
		return fmt.Sprintf("%d events, then stalls", len(r.Events))
	default:
		return ""
	}
	d, _ := json.Marshal(e.Details)
	return fmt.Sprintf("fails %s %s", e.Code, d)
}
