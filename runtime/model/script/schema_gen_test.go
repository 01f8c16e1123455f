package script

import (
	"reflect"

	"github.com/agentoslab/agentlab/internal/yamlschema"
	"github.com/google/jsonschema-go/jsonschema"
)

func ptr[T any](v T) *T { return &v }

func anyOf(v any) *any { return &v }

func required(keys ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: keys} }

// onlyKeys: when the step has key (set to true, or at all), it has no
// other keys than keys.
func onlyKeys(key string, isTrue bool, keys ...string) *jsonschema.Schema {
	cond := &jsonschema.Schema{Required: []string{key}}
	if isTrue {
		cond.Properties = map[string]*jsonschema.Schema{key: {Const: anyOf(true)}}
	}
	enum := make([]any, len(keys))
	for i, k := range keys {
		enum[i] = k
	}
	return &jsonschema.Schema{If: cond, Then: &jsonschema.Schema{PropertyNames: &jsonschema.Schema{Enum: enum}}}
}

// generateSchema builds script.schema.json from the document types; docs
// are their doc comments.
func generateSchema(docs map[string]string) ([]byte, error) {
	millis := func(s *jsonschema.Schema) { s.Minimum, s.Maximum = ptr(0.0), ptr(float64(maxDelayMs)) }
	count := func(s *jsonschema.Schema) { s.Minimum, s.Maximum = ptr(0.0), ptr(float64(maxCutOrEnd)) }
	nonEmpty := func(s *jsonschema.Schema) { s.MinLength = ptr(1) }
	s := yamlschema.Schema(reflect.TypeFor[document](), yamlschema.SchemaOptions{
		ID:    "https://agentoslab.github.io/schemas/model-script-v1.json",
		Title: "AgentOS model script",
		Description: "What a scripted model answers to each request of a turn (FORMAT.md), generated from the Go types of " +
			"runtime/model/script. Parse is the authority; this schema says the rules a schema can express.",
		Docs: docs,
		Types: map[reflect.Type]*jsonschema.Schema{
			reflect.TypeFor[str](): {Type: "string"},
			reflect.TypeFor[chunks](): {Description: "One string (split into chunkChars-character chunks when chunkChars is set) or a list of chunks.",
				OneOf: []*jsonschema.Schema{{Type: "string"}, {Type: "array", Items: &jsonschema.Schema{Type: "string"}}}},
			reflect.TypeFor[argument](): {Type: "object"},
		},
		Fields: map[string]func(*jsonschema.Schema){
			"document.version":   func(s *jsonschema.Schema) { s.Type, s.Const = "", anyOf(1) },
			"document.steps":     func(s *jsonschema.Schema) { s.MaxItems = ptr(MaxSteps) },
			"stepDoc.chunkChars": func(s *jsonschema.Schema) { s.Minimum = ptr(1.0) },
			"stepDoc.repeat":     func(s *jsonschema.Schema) { s.Minimum, s.Maximum = ptr(1.0), ptr(float64(maxCutOrEnd)) },
			"stepDoc.stop": func(s *jsonschema.Schema) {
				s.Type, s.Enum = "", []any{"end_turn", "tool_use", "max_tokens", "refusal"}
			},
			"stepDoc.delayMs":    millis,
			"stepDoc.intervalMs": millis,
			"stepDoc.cutAfter":   count,
			"stepDoc.hangAfter":  count,
			"failDoc.status": func(s *jsonschema.Schema) {
				s.Minimum, s.Maximum, s.Not = ptr(100.0), ptr(599.0), &jsonschema.Schema{Minimum: ptr(200.0), Maximum: ptr(299.0)}
			},
			"failDoc.retryAfter": func(s *jsonschema.Schema) {
				s.Type, s.OneOf = "", []*jsonschema.Schema{{Type: "integer", Minimum: ptr(0.0)}, {Type: "string", MinLength: ptr(1)}}
			},
			"failDoc.hang": func(s *jsonschema.Schema) { s.Type, s.Const = "", anyOf(true) },
			"callDoc.id":   nonEmpty,
			"callDoc.name": nonEmpty,
			"callDoc.mcp": func(s *jsonschema.Schema) {
				word := func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string", MinLength: ptr(1)} }
				s.PrefixItems, s.Items, s.MinItems = []*jsonschema.Schema{word(), word(), word()}, &jsonschema.Schema{Not: &jsonschema.Schema{}}, ptr(3)
			},
		},
		Structs: map[reflect.Type]func(*jsonschema.Schema){
			reflect.TypeFor[stepDoc](): func(s *jsonschema.Schema) {
				s.Not = required("cutAfter", "hangAfter")
				s.AllOf = []*jsonschema.Schema{
					onlyKeys("fail", false, "comment", "fail", "delayMs"),
					onlyKeys("echo", true, "comment", "echo", "chunkChars", "delayMs", "intervalMs"),
					onlyKeys("compromised", true, "comment", "compromised", "text", "thinking", "chunkChars", "delayMs", "intervalMs"),
				}
			},
			reflect.TypeFor[failDoc](): func(s *jsonschema.Schema) {
				s.OneOf = []*jsonschema.Schema{
					{Required: []string{"status"}, Not: required("hang")},
					{Required: []string{"hang"}, Not: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{required("status"), required("retryAfter")}}},
				}
			},
			reflect.TypeFor[callDoc](): func(s *jsonschema.Schema) {
				s.OneOf = []*jsonschema.Schema{{Required: []string{"name"}, Not: required("mcp")}, {Required: []string{"mcp"}, Not: required("name")}}
			},
		},
	})
	return yamlschema.MarshalSchema(s)
}
