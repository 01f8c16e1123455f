package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/lab/steps"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"gopkg.in/yaml.v3"
)

// A recorded attempt (lab.yaml model.mode record) is replayed from its
// artifact folder: recording.yaml names the scenario file, and each
// device's model-script.yaml holds the provider's answers. The scenario is
// rewritten with that script inline (model: {script: …}) and run on the
// stub, so the attempt's model is the same every time.

// ReadRecording reads the manifest of a recorded attempt.
func ReadRecording(dir string) (*steps.Recording, error) {
	b, err := os.ReadFile(filepath.Join(dir, steps.RecordingFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, &Error{Kind: ErrConfig, Hint: "record with model.mode: record in lab.yaml; replay an attempt's folder, artifacts/NAME/attempt-N",
			Err: fmt.Errorf("%s holds no %s: not a recorded attempt", dir, steps.RecordingFile)}
	}
	if err != nil {
		return nil, &Error{Kind: ErrConfig, Err: err}
	}
	var rec steps.Recording
	if err := yaml.Unmarshal(b, &rec); err != nil {
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("%s: %w", steps.RecordingFile, err)}
	}
	if rec.Scenario == "" || rec.File == "" || len(rec.Scripts) == 0 {
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("%s: names no scenario, file or model script", steps.RecordingFile)}
	}
	return &rec, nil
}

// ReplayScenario is the scenario file that replays the recorded attempt
// in dir: the recorded scenario's file with the model replaced by the
// recorded script (inline, as YAML), needs.model dropped (a script runs
// on the stub), upstream mappings dropped (the original keeps them), and
// name set to name ("" keeps the original's). The result is validated.
func ReplayScenario(dir, name string) ([]byte, *steps.Recording, error) {
	rec, err := ReadRecording(dir)
	if err != nil {
		return nil, nil, err
	}
	src, err := os.ReadFile(rec.File)
	if err != nil {
		return nil, nil, &Error{Kind: ErrConfig, Hint: "replay from the folder the recorded run ran in",
			Err: fmt.Errorf("the recorded scenario file: %w", err)}
	}
	orig, err := scenario.Parse(src, rec.File, nil)
	if err != nil {
		return nil, nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("the recorded scenario: %w", err)}
	}
	// One model serves a scenario; its default device's script is it.
	role := orig.Roles()[0]
	sf, ok := rec.Scripts[role]
	if !ok {
		for _, r := range slices.Sorted(maps.Keys(rec.Scripts)) {
			sf = rec.Scripts[r]
			break
		}
	}
	sdoc, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(sf)))
	if err != nil {
		return nil, nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("the recorded model script: %w", err)}
	}
	if _, err := script.Parse(sdoc); err != nil {
		return nil, nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("the recorded model script: %w", err)}
	}
	var sroot yaml.Node
	if err := yaml.Unmarshal(sdoc, &sroot); err != nil || len(sroot.Content) != 1 {
		return nil, nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("the recorded model script: not one YAML document")}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("%s: not a YAML mapping", rec.File)}
	}
	top := root.Content[0]
	if name == "" {
		name = orig.Name
	}
	setKey(top, "name", strNode(name))
	desc := strings.TrimSpace(orig.Description)
	if desc != "" {
		desc += " "
	}
	desc += fmt.Sprintf("Replays attempt %d of %s, recorded from a live model (agentlab replay).", rec.Attempt, orig.Name)
	setKey(top, "description", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: desc, Style: yaml.FoldedStyle})
	deleteKey(top, "upstream")
	if needs := valueOf(top, "needs"); needs != nil && needs.Kind == yaml.MappingNode {
		deleteKey(needs, "model")
		needs.Style = 0
	}
	if checks := valueOf(top, "checks"); checks != nil && checks.Kind == yaml.SequenceNode {
		for _, c := range checks.Content {
			if c.Kind == yaml.MappingNode {
				deleteKey(c, "upstream")
			}
		}
	}
	model := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{strNode("script"), sroot.Content[0]}}
	setKey(top, "model", model)
	unflow(top)
	long := map[string]string{}
	foldLong(top, long)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, nil, fmt.Errorf("replay scenario: %w", err)
	}
	enc.Close()
	doc := out.Bytes()
	if len(long) > 0 {
		doc = unfoldPlaceholders(doc, long)
	}
	if _, err := scenario.Parse(doc, rec.File, nil); err != nil {
		return nil, nil, fmt.Errorf("the replay scenario does not validate: %w", err)
	}
	return doc, rec, nil
}

// maxLine is the longest line a scenario file may have (the corpus
// rule); strings longer than longString are written over several lines.
const (
	maxLine    = 160
	longString = 80
)

// unflow turns flow collections that spanned lines in the original into
// block ones: re-encoded, a flow collection is one line.
func unflow(n *yaml.Node) {
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle != 0 && spansLines(n, n.Line) {
		n.Style &^= yaml.FlowStyle
	}
	for _, c := range n.Content {
		unflow(c)
	}
}

func spansLines(n *yaml.Node, line int) bool {
	if n.Line != 0 && n.Line != line {
		return true
	}
	for _, c := range n.Content {
		if spansLines(c, line) {
			return true
		}
	}
	return false
}

// foldLong replaces each long string scalar by a placeholder, to be
// written as a double-quoted scalar over several lines (the encoder never
// breaks a line), keeping the value exact.
func foldLong(n *yaml.Node, long map[string]string) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && len(n.Value) > longString {
		ph := fmt.Sprintf("agentlab_long_string_%d_", len(long))
		long[ph] = n.Value
		n.Value, n.Style, n.Tag = ph, 0, "!!str"
		return
	}
	for _, c := range n.Content {
		foldLong(c, long)
	}
}

// unfoldPlaceholders writes each placeholder's string as a double-quoted
// scalar whose lines end in an escaped line break, continued at the
// placeholder's column.
func unfoldPlaceholders(doc []byte, long map[string]string) []byte {
	lines := strings.Split(string(doc), "\n")
	for i, ln := range lines {
		for ph, v := range long {
			col := strings.Index(ln, ph)
			if col < 0 {
				continue
			}
			lines[i] = ln[:col] + quoteLines(v, strings.Repeat(" ", col)) + ln[col+len(ph):]
			ln = lines[i]
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// quoteLines is s as a YAML double-quoted scalar, broken into pieces of
// at most longString bytes; a piece that starts with a space escapes it,
// since a continuation line's leading blanks are not content.
func quoteLines(s, indent string) string {
	q := strconv.Quote(s)
	body := q[1 : len(q)-1]
	var b strings.Builder
	b.WriteByte('"')
	for len(body) > longString {
		cut := longString
		// Do not cut inside an escape sequence or a UTF-8 character.
		for cut > 1 && !safeCut(body, cut) {
			cut--
		}
		b.WriteString(body[:cut])
		b.WriteString("\\\n")
		b.WriteString(indent)
		body = body[cut:]
		if strings.HasPrefix(body, " ") {
			b.WriteString("\\ ")
			body = body[1:]
		}
	}
	b.WriteString(body)
	b.WriteByte('"')
	return b.String()
}

// safeCut reports whether body (a Go-quoted string's inside) may be cut
// before i: not within a UTF-8 character or after an odd run of
// backslashes, nor within the few characters after a backslash.
func safeCut(body string, i int) bool {
	if !utf8.RuneStart(body[i]) {
		return false
	}
	for j := i - 1; j >= 0 && j >= i-10; j-- {
		if body[j] == '\\' {
			// An escape starting at j spans at most 10 bytes (\UXXXXXXXX).
			n := 2
			switch body[j+1] {
			case 'x':
				n = 4
			case 'u':
				n = 6
			case 'U':
				n = 10
			}
			if j+n > i {
				// Count the backslashes before j: an even run means j
				// starts an escape.
				k := j
				for k > 0 && body[k-1] == '\\' {
					k--
				}
				if (j-k)%2 == 0 {
					return false
				}
			}
		}
	}
	return true
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey replaces key's value, or adds the key after name (or at the end).
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v.HeadComment, v.LineComment = "", ""
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, strNode(key), v)
}

func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// ReplayOptions are agentlab replay's.
type ReplayOptions struct {
	// Repeat runs the replay N times on one device (default 1);
	// UntilFail stops at the first failing attempt (with Repeat 0, within
	// the runner's bound of 100).
	Repeat    int
	UntilFail bool
}

// ReplayAttempt is how one replayed attempt compares with the recording.
type ReplayAttempt struct {
	Number  int             `json:"attempt"`
	Verdict reports.Verdict `json:"verdict"`
	// Reproduced says whether the verdict and the prompts' events are the
	// recorded ones; Diffs say what differs.
	Reproduced bool     `json:"reproduced"`
	Diffs      []string `json:"diffs,omitempty"`
}

// Replay reruns the recorded attempt in dir on the stub with its recorded
// script, on one device (Repeat times, each attempt kept), and compares
// every attempt's verdict and event streams with the recording. The run
// itself is Run's: cfg's devices and build, its output folder.
func Replay(ctx context.Context, cfg *config.Config, dir string, ro *ReplayOptions, opts *Options) (*reports.Run, []ReplayAttempt, error) {
	doc, rec, err := ReplayScenario(dir, "")
	if err != nil {
		return nil, nil, err
	}
	suite, err := os.MkdirTemp("", "agentlab-replay-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(suite)
	if err := stageScenario(suite, rec, doc); err != nil {
		return nil, nil, err
	}
	c := *cfg
	c.Scenarios = []string{suite}
	c.Model = config.Model{Mode: config.ModelStub}
	c.Tags = config.Tags{}
	c.Shard = config.Shard{}
	o := opts.orDefault()
	var r ReplayOptions
	if ro != nil {
		r = *ro
	}
	o.Repeat, o.UntilFail = max(r.Repeat, 1), r.UntilFail
	if r.UntilFail && r.Repeat == 0 {
		o.Repeat = 0 // the runner's own bound for --until-fail
	}
	o.who = "agentlab replay"
	run, err := Run(ctx, &c, Selection{Names: []string{rec.Scenario}}, o)
	if run == nil {
		return nil, nil, err
	}
	var out []ReplayAttempt
	for _, s := range run.Scenarios {
		if s.Name != rec.Scenario {
			continue
		}
		for _, at := range s.Attempts {
			ra := ReplayAttempt{Number: at.Number, Verdict: at.Verdict}
			if want := reports.Verdict(rec.Verdict); at.Verdict != want {
				ra.Diffs = append(ra.Diffs, fmt.Sprintf("verdict %s, recorded %s", at.Verdict, want))
			}
			if adir := attemptFolder(at); adir != "" {
				ra.Diffs = append(ra.Diffs, CompareEvents(dir, filepath.Join(c.Output, filepath.FromSlash(adir)))...)
			} else {
				ra.Diffs = append(ra.Diffs, "the replayed attempt kept no artifacts")
			}
			ra.Reproduced = len(ra.Diffs) == 0
			out = append(out, ra)
		}
	}
	return run, out, err
}

// stageScenario writes the replay scenario into suite at its name's path,
// with the side files (fragments, scripts) of the recorded scenario's
// folder and the folder above it, where includes look for them.
func stageScenario(suite string, rec *steps.Recording, doc []byte) error {
	dst := filepath.Join(suite, filepath.FromSlash(rec.Scenario)+".yaml")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	srcDir, dstDir := filepath.Dir(rec.File), filepath.Dir(dst)
	for range 2 {
		ents, _ := os.ReadDir(srcDir)
		for _, e := range ents {
			if e.Type().IsRegular() && !scenario.IsScenarioFile(e.Name()) {
				b, err := os.ReadFile(filepath.Join(srcDir, e.Name()))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dstDir, e.Name()), b, 0o644); err != nil {
					return err
				}
			}
		}
		if dstDir == suite {
			break
		}
		srcDir, dstDir = filepath.Dir(srcDir), filepath.Dir(dstDir)
	}
	return os.WriteFile(dst, doc, 0o644)
}

// attemptFolder is the artifact folder of at, relative to the run's.
func attemptFolder(at reports.Attempt) string {
	for _, a := range at.Artifacts {
		if path.Base(a.Path) == "steps.json" {
			return path.Dir(a.Path)
		}
	}
	return ""
}

// CompareEvents compares the prompts' event streams (events-*.json) of
// two attempt folders and says what differs. Ids, times and durations
// differ between any two runs and are left out; what the model said and
// did, what the tools answered, and the stream's update kinds in order
// must be the same.
func CompareEvents(want, got string) []string {
	names := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, "events-*.json"))
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		slices.Sort(m)
		return m
	}
	wn, gn := names(want), names(got)
	var diffs []string
	if !slices.Equal(wn, gn) {
		diffs = append(diffs, fmt.Sprintf("event streams %v, recorded %v", gn, wn))
	}
	for _, n := range wn {
		if !slices.Contains(gn, n) {
			continue
		}
		w, err1 := eventSummary(filepath.Join(want, n))
		g, err2 := eventSummary(filepath.Join(got, n))
		if err := errors.Join(err1, err2); err != nil {
			diffs = append(diffs, err.Error())
			continue
		}
		if !reflect.DeepEqual(w, g) {
			wb, _ := json.Marshal(w)
			gb, _ := json.Marshal(g)
			diffs = append(diffs, fmt.Sprintf("%s: %s, recorded %s", n, clip(string(gb), 600), clip(string(wb), 600)))
		}
	}
	return diffs
}

// eventSummary is the part of a prompt's saved result that a replay must
// reproduce.
func eventSummary(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r struct {
		StopReason string `json:"stopReason"`
		Text       string `json:"text"`
		Thoughts   string `json:"thoughts"`
		ToolCalls  []struct {
			Name      string `json:"name"`
			Kind      string `json:"kind"`
			Status    string `json:"status"`
			Arguments any    `json:"arguments"`
			Result    string `json:"result"`
		} `json:"toolCalls"`
		Updates []struct {
			Kind string `json:"sessionUpdate"`
		} `json:"updates"`
		Error *struct {
			Code        int    `json:"code"`
			AgentosCode string `json:"agentosCode"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	var kinds []string
	for _, u := range r.Updates {
		kinds = append(kinds, u.Kind)
	}
	tb, _ := json.Marshal(r.ToolCalls)
	var calls any
	json.Unmarshal(tb, &calls)
	out := map[string]any{"stopReason": r.StopReason, "text": r.Text, "thoughts": r.Thoughts, "toolCalls": calls, "updates": kinds}
	if r.Error != nil {
		out["error"] = fmt.Sprintf("%d %s", r.Error.Code, r.Error.AgentosCode)
	}
	return out, nil
}
