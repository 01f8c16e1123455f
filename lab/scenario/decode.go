package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// The scenario language is decoded by internal/strictyaml; this file
// holds the YAML forms of the types that have their own (durations, any
// value, device counts, model shorthands, matcher shorthands, steps that
// work out their kind).

// Problem is one thing wrong with a scenario, at a position in its file.
type Problem = strictyaml.Problem

// Error lists every problem found. It wraps ErrInvalid.
type Error = strictyaml.Error

func join(path, key string) string { return strictyaml.Join(path, key) }

func index(path string, i int) string { return strictyaml.Index(path, i) }

func clip(s string, n int) string { return strictyaml.Clip(s, n) }

// decodeTypes are the types with YAML forms of their own.
var decodeTypes = map[reflect.Type]strictyaml.DecodeFunc{
	reflect.TypeFor[Duration]():    decodeDuration,
	reflect.TypeFor[Value]():       decodeValue,
	reflect.TypeFor[Devices]():     decodeDevices,
	reflect.TypeFor[Model]():       decodeModel,
	reflect.TypeFor[Matcher]():     decodeMatcher,
	reflect.TypeFor[Step]():        decodeStep,
	reflect.TypeFor[PlanOp]():      decodePlanOp,
	reflect.TypeFor[Script]():      decodeScript,
	reflect.TypeFor[ModelScript](): decodeModelScript,
	reflect.TypeFor[Arg]():         decodeArg,
	reflect.TypeFor[*CallerStep](): decodeCaller,
}

// decodeCaller keeps a caller step even when parts of it have problems,
// so that every operation of its plan is checked in one pass.
func decodeCaller(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	if strictyaml.IsNull(n) {
		return
	}
	c := &CallerStep{}
	d.DecodeStruct(n, reflect.ValueOf(c).Elem(), path)
	v.Set(reflect.ValueOf(c))
}

// decodeArg reads an argument: a scalar's text, or a mapping or list.
func decodeArg(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	a := v.Addr().Interface().(*Arg)
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		var x Value
		decodeValue(d, n, reflect.ValueOf(&x).Elem(), path)
		a.JSON = &x
		return
	}
	if s, ok := d.ScalarString(n, path); ok {
		a.Text = s
	}
}

func newDecoder(file string) *strictyaml.Decoder {
	return strictyaml.NewDecoder(strictyaml.Options{File: file, Types: decodeTypes, OneAsList: true})
}

// decodeDuration reads a Go duration string ("15s").
func decodeDuration(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	x, ok := parseDuration(d, n, path)
	if ok {
		v.SetInt(int64(x))
	}
}

func parseDuration(d *strictyaml.Decoder, n *yaml.Node, path string) (time.Duration, bool) {
	if n.Kind != yaml.ScalarNode || strictyaml.IsNull(n) {
		d.Addf(n, path, "want a duration like 15s or 2m, got %s", strictyaml.Describe(n))
		return 0, false
	}
	if n.Value == "0" {
		return 0, true
	}
	x, err := time.ParseDuration(n.Value)
	if err != nil {
		d.Addf(n, path, "want a duration like 15s or 2m, got %s", strictyaml.Describe(n))
		return 0, false
	}
	if x < 0 {
		d.Addf(n, path, "duration must not be negative, got %s", n.Value)
		return 0, false
	}
	return x, true
}

// decodeValue reads any YAML value as its JSON equivalent.
func decodeValue(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	x, ok := d.Any(n, path)
	if ok {
		v.Addr().Interface().(*Value).V = x
	}
}

// decodeDevices reads a count (devices: 2) or role names (devices: [a, b]).
func decodeDevices(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	ds := v.Addr().Interface().(*Devices)
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		i, err := strconv.Atoi(n.Value)
		if err != nil {
			d.Addf(n, path, "want a device count or a list of roles, got %s", strictyaml.Describe(n))
			return
		}
		ds.Count = i
	case n.Kind == yaml.SequenceNode:
		d.Decode(n, &ds.Names, path)
		ds.Count = len(ds.Names)
	default:
		d.Addf(n, path, "want a device count or a list of roles, got %s", strictyaml.Describe(n))
	}
}

// decodeModel reads "live" or a mapping; an inline script is decoded by
// runtime/model/script's own rules, its problems placed in this file.
func decodeModel(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	m := v.Addr().Interface().(*Model)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if n.Value != ModelLive {
			d.Addf(n, path, "want live, or a mapping with script, file or chaos, got %s", strictyaml.Describe(n))
			return
		}
		m.Live = true
		return
	}
	d.DecodeStruct(n, v, path)
}

// decodeScript reads a script written inline (a mapping) or the name of
// its side file.
func decodeScript(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	sc := v.Addr().Interface().(*Script)
	switch {
	case n.Kind == yaml.MappingNode:
		sc.node = n
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value != "":
		sc.File = n.Value
	default:
		d.Addf(n, path, "want a script (a mapping with steps) or its file (NAME.script.yaml), got %s", describe(n))
	}
}

// decodeModelScript reads model.script: a script inline, or the name of
// one of the scenario's scripts.
func decodeModelScript(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	ms := v.Addr().Interface().(*ModelScript)
	switch {
	case n.Kind == yaml.MappingNode:
		ms.Inline = &Script{node: n}
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value != "":
		ms.Name = n.Value
	default:
		d.Addf(n, path, "want a script (a mapping with steps) or the name of one of scripts, got %s", describe(n))
	}
}

// decodeMatcher reads a matcher, or a bare value meaning eq (len: 3).
func decodeMatcher(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	m := v.Addr().Interface().(*Matcher)
	if n.Kind != yaml.MappingNode {
		var x Value
		decodeValue(d, n, reflect.ValueOf(&x).Elem(), path)
		m.Eq = &x
		return
	}
	d.DecodeStruct(n, v, path)
}

// decodeStep reads a step and works out its kind from the keys written.
func decodeStep(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	s := v.Addr().Interface().(*Step)
	d.DecodeStruct(n, v, path)
	if n.Kind != yaml.MappingNode {
		return
	}
	var kinds []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; slices.Contains(StepKinds, k) && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 0:
		d.Addf(n, path, "a step needs one kind: %s", strings.Join(StepKinds, ", "))
	case 1:
		s.kind = kinds[0]
		if !s.hasValue() && !d.HasProblemUnder(join(path, s.kind)) {
			d.Addf(n, join(path, s.kind), "%s needs a value", s.kind)
		}
	default:
		d.Addf(n, path, "a step has one kind, this one has %s", strings.Join(kinds, " and "))
	}
}

// hasValue reports whether the field of the step's kind was decoded.
func (s *Step) hasValue() bool {
	switch s.kind {
	case KindReset:
		return s.Reset != nil
	case KindSeed:
		return s.Seed != nil
	case KindApp:
		return s.App != nil
	case KindCallers:
		return s.Callers != nil
	case KindAsk:
		return s.Ask != nil
	case KindPrompt:
		return s.Prompt != nil
	case KindConsent:
		return s.Consent != nil
	case KindTap:
		return s.Tap != nil
	case KindApproval:
		return s.Approval != nil
	case KindPlugins:
		return s.Plugins != nil
	case KindTools:
		return s.Tools != nil
	case KindWait:
		return s.Wait != nil
	case KindRun:
		return s.Run != nil
	case KindCheck:
		return s.Check != nil
	case KindCaller:
		return s.Caller != nil
	case KindBridge:
		return s.Bridge != nil
	case KindInstall:
		return s.Install != nil
	case KindACPClient:
		return s.ACPClient != nil
	case KindInclude:
		return s.Include != nil
	}
	return true
}

func describe(n *yaml.Node) string { return strictyaml.Describe(n) }

// unknownIn words an unknown name among known ones: what, then a "did
// you mean" or the known names.
func unknownIn(what, key string, known []string) string {
	if s := strictyaml.Suggest(key, known); s != "" {
		return fmt.Sprintf("%s (did you mean %q?)", what, s)
	}
	return fmt.Sprintf("%s (known: %s)", what, strings.Join(known, ", "))
}
