package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

var updateGoldens = flag.Bool("update", false, "rewrite the server sections of testdata/transcripts")

// A transcript (testdata/transcripts/*.txtar) is a whole ACP exchange on
// one connection. Its prose header says what it pins. Sections:
//
//	-- caller --      desktop | app (default desktop)
//	-- consent --     one "<tool> allow|deny" a line: the owner's answer
//	                  when the tool layer asks about that tool (default:
//	                  nobody is asked)
//	-- model --       one scripted model reply per line:
//	                  {"text":["a","b"]} {"thought":"t"} {"calls":[{"id","name","arguments"}]}
//	                  {"error":"<agentosCode>","message":"..."}
//	-- N client --    lines sent as they are (any bytes, one message a line),
//	                  except that ses_<n>/tsk_<n> name the ids the server
//	                  sections number that way
//	-- N server --    what the agent answered to them, normalized: session
//	                  and task ids numbered by first appearance, times fixed
//
// The runner sends a client section, then reads until every request in it
// is answered and every line that is not a JSON-RPC object got its error.
// With -update the server sections are rewritten from the real agent.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runTranscript(t, file)
		})
	}
}

type section struct {
	name string
	body string
}

// parseTxtar splits a txtar file into its header and sections.
func parseTxtar(data string) (string, []section) {
	var (
		header strings.Builder
		out    []section
	)
	for line := range strings.Lines(data) {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			out = append(out, section{name: trimmed[3 : len(trimmed)-3]})
			continue
		}
		if len(out) == 0 {
			header.WriteString(line)
		} else {
			out[len(out)-1].body += line
		}
	}
	return header.String(), out
}

func formatTxtar(header string, secs []section) string {
	var b strings.Builder
	b.WriteString(header)
	for _, s := range secs {
		fmt.Fprintf(&b, "-- %s --\n%s", s.name, s.body)
		if s.body != "" && !strings.HasSuffix(s.body, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func modelReply(t *testing.T, line string) enginetest.Reply {
	var spec struct {
		Text    []string         `json:"text"`
		Thought string           `json:"thought"`
		Calls   []model.ToolCall `json:"calls"`
		Error   string           `json:"error"`
		Message string           `json:"message"`
	}
	if err := json.Unmarshal([]byte(line), &spec); err != nil {
		t.Fatalf("model line %q: %v", line, err)
	}
	var r enginetest.Reply
	if spec.Error != "" {
		r.Err = errcode.New(errcode.Code(spec.Error), spec.Message)
		return r
	}
	if spec.Thought != "" {
		r.Events = append(r.Events, model.Event{Kind: model.ThinkingDelta, Text: spec.Thought})
	}
	r.Events = append(r.Events, enginetest.Text(spec.Text...).Events...)
	if len(spec.Calls) > 0 {
		r.Events = append(r.Events, enginetest.Calls(spec.Calls...).Events...)
	}
	return r
}

func runTranscript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	header, secs := parseTxtar(string(data))
	if strings.TrimSpace(header) == "" {
		t.Fatal("a transcript needs a prose header saying what it pins")
	}
	h := newHarness(t, harnessOpts{})
	caller := desktop
	norm := newNormalizer()
	var c *client
	for i := range secs {
		s := &secs[i]
		switch {
		case s.name == "caller":
			if strings.TrimSpace(s.body) == "app" {
				caller = appA
			}
		case s.name == "consent":
			answers := map[string]enginetest.Decision{}
			for _, line := range nonEmptyLines(s.body) {
				tool, answer, _ := strings.Cut(strings.TrimSpace(line), " ")
				answers[tool] = map[string]enginetest.Decision{"allow": enginetest.Allow, "deny": enginetest.Deny}[answer]
			}
			h.tools.Consent = func(_ context.Context, req engine.ToolCallRequest) enginetest.Decision { return answers[req.Name] }
		case s.name == "model":
			for _, line := range nonEmptyLines(s.body) {
				h.model.Push(modelReply(t, line))
			}
		case strings.HasSuffix(s.name, " client"):
			if c == nil {
				c = h.connect(caller)
			}
			var lines []string
			for _, l := range nonEmptyLines(s.body) {
				lines = append(lines, norm.resolve(l))
			}
			got := exchange(t, c, lines)
			want := strings.TrimSuffix(s.name, " client") + " server"
			var out strings.Builder
			for _, m := range got {
				out.WriteString(norm.apply(m) + "\n")
			}
			if i+1 >= len(secs) || secs[i+1].name != want {
				t.Fatalf("section %q must be followed by %q", s.name, want)
			}
			if *updateGoldens {
				secs[i+1].body = out.String()
			} else if secs[i+1].body != out.String() {
				t.Errorf("%s: section %q differs\n--- got\n%s--- want\n%s", file, want, out.String(), secs[i+1].body)
			}
		}
	}
	if *updateGoldens {
		if err := os.WriteFile(file, []byte(formatTxtar(header, secs)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if l := strings.TrimRight(line, "\r\n"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// exchange sends lines one at a time; after each request (or line that
// is not a JSON-RPC request) it waits for the reply, so the order of the
// server section is deterministic. It returns every message received.
func exchange(t *testing.T, c *client, lines []string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, l := range lines {
		c.sendRaw(l)
		want, ok := expectedReply(l)
		if !ok {
			continue
		}
		m, _, found := c.waitFor(func(m message) bool {
			if m.Method != "" {
				return false
			}
			if want == "" {
				return m.ID == nil
			}
			return m.ID != nil && string(*m.ID) == want
		}, 20*time.Second)
		if !found {
			t.Fatalf("no reply to %s", l)
		}
		_ = m
		out = append(out, c.taken()...)
	}
	return out
}

// expectedReply says which reply a line gets: the id of a request, ""
// for an error reply with id null (not JSON, not an object), ok false for
// a notification.
func expectedReply(line string) (id string, ok bool) {
	var probe struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  string           `json:"method"`
	}
	if !json.Valid([]byte(line)) || json.Unmarshal([]byte(line), &probe) != nil {
		return "", true
	}
	if probe.ID == nil {
		return "", probe.JSONRPC != "2.0"
	}
	return string(*probe.ID), true
}

// normalizer makes server messages comparable across runs.
type normalizer struct {
	ids  map[string]string // real id -> placeholder
	real map[string]string // placeholder -> real id
	n    map[string]int
}

func newNormalizer() *normalizer {
	return &normalizer{ids: map[string]string{}, real: map[string]string{}, n: map[string]int{}}
}

var placeholderRE = regexp.MustCompile(`\b(ses|tsk)_[0-9]{1,3}\b`)

// resolve puts the real ids into a client line.
func (n *normalizer) resolve(line string) string {
	return placeholderRE.ReplaceAllStringFunc(line, func(p string) string {
		if r, ok := n.real[p]; ok {
			return r
		}
		return p
	})
}

var (
	idRE   = regexp.MustCompile(`\b(ses|tsk)_[0-9A-HJKMNP-TV-Z]{26}\b`)
	timeRE = regexp.MustCompile(`"updatedAt":"[^"]*"`)
)

func (n *normalizer) apply(raw json.RawMessage) string {
	var buf bytes.Buffer
	json.Compact(&buf, raw)
	s := idRE.ReplaceAllStringFunc(buf.String(), func(id string) string {
		if v, ok := n.ids[id]; ok {
			return v
		}
		prefix := id[:3]
		n.n[prefix]++
		v := prefix + "_" + strconv.Itoa(n.n[prefix])
		n.ids[id] = v
		n.real[v] = id
		return v
	})
	return timeRE.ReplaceAllString(s, `"updatedAt":"<time>"`)
}
