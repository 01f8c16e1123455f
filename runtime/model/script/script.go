// Package script is the scripted model: one documented format (FORMAT.md,
// script.schema.json) that says what a model answers to each request, so
// that runtime tests and lab scenarios run deterministically.
//
// The package is transport-free. Parse reads a script; (*Script).Respond
// decides the next answer from a model request alone — the step index is
// the number of assistant messages after the last user message — so a
// restarted runtime, or the lab's HTTP model stub serving several devices
// at once, gives the same answers. NewProvider serves scripts to the
// runtime as a model.Provider; the lab stub serves the same Responses over
// OpenAI-compatible and Anthropic HTTP.
//
// A script can stream text and thinking, call tools (by final name or by
// raw [plugin, server, tool], with values substituted from earlier tool
// results), fail as a provider fails (an HTTP status, a cut stream, a
// hang), or turn "compromised": follow every instruction it finds in the
// conversation, so scenarios test the runtime's boundaries rather than a
// model's manners. A user message that is itself a script document (first
// line "#!agentos-script") drives that turn.
package script

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// Header is the first line of a script document inside a prompt.
const Header = "#!agentos-script"

// Limits on a script document.
const (
	MaxSize     = 1 << 20 // bytes
	MaxSteps    = 1000
	MaxDelay    = 10 * time.Minute
	maxDelayMs  = int(MaxDelay / time.Millisecond)
	maxCutOrEnd = 1 << 20
	// MaxRepeatChars bounds the text a repeated step streams (16 Mi
	// characters: upstream's largest stream is 500 × 16,000).
	MaxRepeatChars = 1 << 24
)

// script.schema.json is generated from the document types by
// TestSchemaUpToDate (go generate), which fails when it is stale.
//
//go:generate go test -run ^TestSchemaUpToDate$ . -update
//go:embed script.schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of a script document.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// ErrInvalid is wrapped by every error Parse returns for a document that
// is not a valid script.
var ErrInvalid = errors.New("invalid script")

// Script is a parsed script; it is immutable and safe for concurrent use.
// A nil *Script is the empty script.
type Script struct {
	// steps answer the model calls of a turn in order: step i answers
	// the call made after i assistant messages.
	steps []step
	// final is the text answered once the steps are used up; nil means
	// echo the last user message.
	final *string
}

// step is one answer. Exactly one kind: a reply (text, thinking, tool
// calls), a failure, a compromised model, or an echo.
type step struct {
	text        []string // chunks, already split
	thinking    []string
	toolCalls   []toolCall
	stop        string // "" means tool_use with tool calls, else end_turn
	delay       time.Duration
	interval    time.Duration
	cutAfter    int // -1: not set
	hangAfter   int // -1: not set
	fail        *failure
	compromised bool
	echo        bool
	chunkChars  int // splits echo texts (0: one chunk)
	line        int
}

// failure makes a step fail before any event.
type failure struct {
	status     int
	retryAfter string
	hang       bool
}

// toolCall is a scripted call. Exactly one of name and mcp is set.
type toolCall struct {
	id   string
	name string
	// mcp is a raw [plugin, server, tool], resolved against the offered
	// tools with the naming algorithm of spec §7.
	mcp []string
	// arguments is the JSON object tree as written; args the same with
	// its strings compiled to substitution templates.
	arguments map[string]any
	args      map[string]any
	line      int
}

// document is the wire form, decoded strictly (internal/strictyaml); the
// field comments are the schema's descriptions (schema.go).
type document struct {
	// Version is the format's version, 1; optional.
	Version *int `yaml:"version"`
	// Description is for the reader.
	Description str `yaml:"description"`
	// Final is the text answered once the steps are used up; default: echo
	// the last user message.
	Final *str `yaml:"final"`
	// Steps answer the model calls of a turn in order.
	Steps []stepDoc `yaml:"steps"`
}

// stepDoc is one answer: a reply (text, thinking, tool calls), a failure,
// a compromised model, or an echo.
type stepDoc struct {
	// Text is streamed as the answer's text.
	Text chunks `yaml:"text"`
	// Thinking is streamed as reasoning before the text.
	Thinking chunks `yaml:"thinking"`
	// ChunkChars splits one text into chunks of this many characters.
	ChunkChars *int `yaml:"chunkChars"`
	// Repeat sends the text's chunks this many times over, for long
	// streams (upstream's chunks × chunkChars) a document could not hold.
	Repeat *int `yaml:"repeat"`
	// ToolCalls are the tools the answer calls.
	ToolCalls []callDoc `yaml:"toolCalls"`
	// Stop is the stop reason; default tool_use with tool calls, else
	// end_turn.
	Stop str `yaml:"stop"`
	// DelayMs waits before the first event.
	DelayMs int `yaml:"delayMs"`
	// IntervalMs waits between events.
	IntervalMs int `yaml:"intervalMs"`
	// CutAfter cuts the stream after this many events.
	CutAfter *int `yaml:"cutAfter"`
	// HangAfter stops sending (and never ends) after this many events.
	HangAfter *int `yaml:"hangAfter"`
	// Fail fails the call as a provider does, before any event.
	Fail *failDoc `yaml:"fail"`
	// Compromised follows every instruction found in the conversation.
	Compromised bool `yaml:"compromised"`
	// Echo answers with the last user message.
	Echo bool `yaml:"echo"`
	// Comment is for the reader; it changes nothing.
	Comment str `yaml:"comment"`
}

// failDoc is how a step fails: an HTTP status, or a hang.
type failDoc struct {
	// Status is a failing HTTP status (100-199, 300-599).
	Status int `yaml:"status"`
	// RetryAfter is the Retry-After header: whole seconds or an HTTP date.
	RetryAfter string `yaml:"retryAfter"`
	// Hang never answers.
	Hang bool `yaml:"hang"`
}

// callDoc is a scripted tool call, by final name or by raw [plugin,
// server, tool].
type callDoc struct {
	// ID is the call's id; default generated.
	ID *str `yaml:"id"`
	// Name is the tool's final name.
	Name *str `yaml:"name"`
	// MCP is the raw [plugin, server, tool], resolved against the offered
	// tools.
	MCP []str `yaml:"mcp"`
	// Arguments are the call's arguments (a JSON object), with
	// $result[N].path substitutions.
	Arguments argument `yaml:"arguments"`
}

// str is a string that must be written as one: name: 123 is a number
// where the schema says string.
type str string

// chunks is a string or a list of strings.
type chunks struct {
	list  []string
	whole bool // written as one string, to be split by chunkChars
	set   bool
}

// argument is a tool call's arguments as written (a JSON object tree).
type argument struct {
	v   any
	set bool
}

// decodeTypes are the script format's own YAML forms.
var decodeTypes = map[reflect.Type]strictyaml.DecodeFunc{
	reflect.TypeFor[str]():      decodeStr,
	reflect.TypeFor[chunks]():   decodeChunks,
	reflect.TypeFor[argument](): decodeArgument,
}

func decodeStr(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.Addf(n, path, "want a string, got %s", strictyaml.Describe(n))
		return
	}
	v.SetString(n.Value)
}

func decodeChunks(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	c := v.Addr().Interface().(*chunks)
	c.set = true
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" {
			d.Addf(n, path, "want a string or a list of strings, got %s", strictyaml.Describe(n))
			return
		}
		c.list, c.whole = []string{n.Value}, true
		return
	case yaml.SequenceNode:
		for i, e := range n.Content {
			if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
				d.Addf(e, strictyaml.Index(path, i), "want a string, got %s", strictyaml.Describe(e))
				continue
			}
			c.list = append(c.list, e.Value)
		}
		return
	}
	d.Addf(n, path, "want a string or a list of strings, got %s", strictyaml.Describe(n))
}

func decodeArgument(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	x, ok := d.Any(n, path)
	if ok {
		a := v.Addr().Interface().(*argument)
		a.v, a.set = x, true
	}
}

// docName names a script document in Parse's problems.
const docName = "script"

// Parse reads a script document: YAML or JSON, optionally starting with
// the "#!agentos-script" line. Unknown keys, wrong types and invalid
// values are errors naming the line and column. An empty document is the
// empty script (every answer echoes).
func Parse(data []byte) (*Script, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxSize)
	}
	root, prob := strictyaml.ParseDocument(data, docName)
	if prob != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, prob)
	}
	if root == nil || strictyaml.IsNull(root) {
		return &Script{}, nil
	}
	d := strictyaml.NewDecoder(strictyaml.Options{File: docName, Types: decodeTypes})
	s := Decode(d, root, "")
	if err := d.Err(ErrInvalid); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err.(*strictyaml.Error).Error())
	}
	return s, nil
}

// Decode reads the script document at n for a document that embeds one
// (a lab scenario), reporting its problems through d under path; it
// returns nil when the script has problems.
func Decode(parent *strictyaml.Decoder, n *yaml.Node, path string) *Script {
	d := parent.Child(decodeTypes)
	before := len(d.Problems())
	if n.Kind != yaml.MappingNode {
		d.Addf(n, path, "a script is a mapping with a steps list, got %s", strictyaml.Describe(n))
		return nil
	}
	var doc document
	d.Decode(n, &doc, path)
	if len(d.Problems()) > before {
		return nil
	}
	if doc.Version != nil && *doc.Version != 1 {
		d.Errorf(strictyaml.Join(path, "version"), "version %d is not supported (want 1)", *doc.Version)
	}
	stepsPath := strictyaml.Join(path, "steps")
	if len(doc.Steps) > MaxSteps {
		d.Errorf(stepsPath, "more than %d steps", MaxSteps)
	}
	stepNodes := seqOf(n, "steps")
	s := &Script{}
	if doc.Final != nil {
		f := string(*doc.Final)
		s.final = &f
	}
	for i, sd := range doc.Steps {
		sp := strictyaml.Index(stepsPath, i)
		var sn *yaml.Node
		if i < len(stepNodes) {
			sn = stepNodes[i]
		}
		st, ok := sd.step(d, sn, sp)
		if !ok {
			continue
		}
		if st.compromised && i != len(doc.Steps)-1 {
			d.Errorf(sp, "a compromised step answers every remaining call of the turn, so it must be the last step")
		}
		s.steps = append(s.steps, st)
	}
	if len(d.Problems()) > before {
		return nil
	}
	return s
}

// Load reads and parses the script file at path.
func Load(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load script %s: %w", path, err)
	}
	return s, nil
}

// step validates one step document; its problems go to d under path.
func (sd stepDoc) step(d *strictyaml.Decoder, n *yaml.Node, path string) (step, bool) {
	st, err := sd.check(n)
	if err != nil {
		d.Errorf(path, "%v", err)
		return st, false
	}
	callNodes := seqOf(n, "toolCalls")
	ok := true
	for j, cd := range sd.ToolCalls {
		var cn *yaml.Node
		if j < len(callNodes) {
			cn = callNodes[j]
		}
		c, err := cd.call(cn)
		if err != nil {
			d.Errorf(strictyaml.Index(strictyaml.Join(path, "toolCalls"), j), "%v", err)
			ok = false
			continue
		}
		st.toolCalls = append(st.toolCalls, c)
	}
	return st, ok
}

// check validates a step's own fields.
func (d stepDoc) check(n *yaml.Node) (step, error) {
	st := step{cutAfter: -1, hangAfter: -1, line: lineOf(n), stop: string(d.Stop), compromised: d.Compromised, echo: d.Echo}
	if d.ChunkChars != nil {
		if *d.ChunkChars < 1 {
			return st, errors.New("chunkChars must be at least 1")
		}
		st.chunkChars = *d.ChunkChars
	}
	reply := d.Text.set || d.Thinking.set || len(d.ToolCalls) > 0 || d.Stop != "" || d.CutAfter != nil || d.HangAfter != nil
	kinds := 0
	for _, k := range []bool{d.Fail != nil, d.Compromised, d.Echo} {
		if k {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return st, errors.New("fail, compromised and echo exclude each other")
	case d.Fail != nil && (reply || d.IntervalMs != 0 || d.ChunkChars != nil):
		return st, errors.New("a fail step takes only delayMs besides fail")
	case d.Echo && reply:
		return st, errors.New("an echo step takes only chunkChars, delayMs and intervalMs")
	case d.Compromised && (len(d.ToolCalls) > 0 || d.Stop != "" || d.CutAfter != nil || d.HangAfter != nil):
		return st, errors.New("a compromised step takes only text, thinking, chunkChars, delayMs and intervalMs")
	}
	for _, v := range []struct {
		name string
		ms   int
		out  *time.Duration
	}{{"delayMs", d.DelayMs, &st.delay}, {"intervalMs", d.IntervalMs, &st.interval}} {
		if v.ms < 0 || v.ms > maxDelayMs {
			return st, fmt.Errorf("%s must be between 0 and %d", v.name, maxDelayMs)
		}
		*v.out = time.Duration(v.ms) * time.Millisecond
	}
	switch st.stop {
	case "", "end_turn", "tool_use", "max_tokens", "refusal":
	default:
		return st, fmt.Errorf("stop %q is not one of end_turn, tool_use, max_tokens, refusal", st.stop)
	}
	if d.CutAfter != nil && d.HangAfter != nil {
		return st, errors.New("cutAfter and hangAfter exclude each other")
	}
	for _, v := range []struct {
		name string
		p    *int
		out  *int
	}{{"cutAfter", d.CutAfter, &st.cutAfter}, {"hangAfter", d.HangAfter, &st.hangAfter}} {
		if v.p == nil {
			continue
		}
		if *v.p < 0 || *v.p > maxCutOrEnd {
			return st, fmt.Errorf("%s must be between 0 and %d", v.name, maxCutOrEnd)
		}
		*v.out = *v.p
	}
	st.text = split(d.Text, st.chunkChars)
	st.thinking = split(d.Thinking, st.chunkChars)
	if d.Repeat != nil {
		text, err := repeatChunks(st.text, *d.Repeat, d.Text.set)
		if err != nil {
			return st, err
		}
		st.text = text
	}
	if d.Fail != nil {
		f, err := d.Fail.failure()
		if err != nil {
			return st, err
		}
		st.fail = f
	}
	return st, nil
}

// repeatChunks sends chunks n times over; the copies share the strings.
func repeatChunks(chunks []string, n int, set bool) ([]string, error) {
	if !set || len(chunks) == 0 {
		return nil, errors.New("repeat needs a text")
	}
	chars := 0
	for _, c := range chunks {
		chars += len([]rune(c))
	}
	switch {
	case n < 1:
		return nil, errors.New("repeat must be at least 1")
	case n*len(chunks) > maxCutOrEnd:
		return nil, fmt.Errorf("repeat makes more than %d chunks", maxCutOrEnd)
	case n*chars > MaxRepeatChars:
		return nil, fmt.Errorf("repeat makes more than %d characters", MaxRepeatChars)
	}
	out := make([]string, 0, n*len(chunks))
	for range n {
		out = append(out, chunks...)
	}
	return out, nil
}

func (d failDoc) failure() (*failure, error) {
	switch {
	case d.Hang && (d.Status != 0 || d.RetryAfter != ""):
		return nil, errors.New("fail.hang excludes status and retryAfter")
	case d.Hang:
		return &failure{hang: true}, nil
	case d.Status == 0:
		return nil, errors.New("fail needs a status or hang: true")
	case d.Status < 100 || d.Status > 599 || (d.Status >= 200 && d.Status <= 299):
		return nil, fmt.Errorf("fail.status %d is not a failing HTTP status (100-199, 300-599)", d.Status)
	}
	if d.RetryAfter != "" {
		ra := strings.TrimSpace(d.RetryAfter)
		if _, err := strconv.ParseUint(ra, 10, 32); err != nil {
			if _, err := http.ParseTime(ra); err != nil {
				return nil, fmt.Errorf("fail.retryAfter %q is neither whole seconds nor an HTTP date", d.RetryAfter)
			}
		}
	}
	return &failure{status: d.Status, retryAfter: strings.TrimSpace(d.RetryAfter)}, nil
}

func (d callDoc) call(n *yaml.Node) (toolCall, error) {
	c := toolCall{line: lineOf(n)}
	if d.ID != nil {
		if *d.ID == "" {
			return c, errors.New("id must not be empty")
		}
		c.id = string(*d.ID)
	}
	if d.Name != nil {
		if *d.Name == "" {
			return c, errors.New("name must not be empty")
		}
		c.name = string(*d.Name)
	}
	if d.MCP != nil {
		c.mcp = make([]string, len(d.MCP))
		for i, s := range d.MCP {
			c.mcp[i] = string(s)
		}
	}
	switch {
	case d.Name != nil && d.MCP != nil:
		return c, errors.New("name and mcp exclude each other")
	case d.Name == nil && d.MCP == nil:
		return c, errors.New("a tool call needs a name or an mcp [plugin, server, tool]")
	case d.MCP != nil && len(d.MCP) != 3:
		return c, errors.New("mcp is [plugin, server, tool]")
	}
	for _, s := range c.mcp {
		if s == "" {
			return c, errors.New("mcp segments must not be empty")
		}
	}
	c.arguments = map[string]any{}
	if d.Arguments.set {
		m, ok := d.Arguments.v.(map[string]any)
		if !ok && d.Arguments.v != nil {
			return c, errors.New("arguments must be a mapping (a JSON object)")
		}
		if m != nil {
			c.arguments = m
		}
	}
	args, err := compileTree(c.arguments)
	if err != nil {
		return c, fmt.Errorf("arguments: %v", err)
	}
	c.args = args.(map[string]any)
	return c, nil
}

// split turns a text field into chunks: a single string is cut into
// n-character pieces when n > 0; a list is kept as written.
func split(c chunks, n int) []string {
	if !c.set {
		return nil
	}
	if !c.whole || n <= 0 {
		return c.list
	}
	return splitRunes(c.list[0], n)
}

func splitRunes(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// seqOf returns the items of the sequence under key in mapping n.
func seqOf(n *yaml.Node, key string) []*yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.SequenceNode {
			return n.Content[i+1].Content
		}
	}
	return nil
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}
