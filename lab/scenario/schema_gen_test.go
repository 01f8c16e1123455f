package scenario

import (
	"reflect"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/internal/yamlschema"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFile is the editors' schema, relative to this package's folder;
// TestSchemaUpToDate generates it from the types (go generate).
const schemaFile = "../../scenarios/scenario.schema.json"

// durationPattern is a Go duration as the decoder reads it.
const durationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`

func ptr[T any](v T) *T { return &v }

func anyValue(v any) *any { return &v }

func required(keys ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: keys} }

func oneOfRequired(keys ...string) []*jsonschema.Schema {
	out := make([]*jsonschema.Schema, len(keys))
	for i, k := range keys {
		out[i] = required(k)
	}
	return out
}

func enum[T any](vals ...T) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}

// itemsOf applies f to a list's items (through the one-string shorthand).
func itemsOf(f func(*jsonschema.Schema)) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		switch {
		case s.Items != nil:
			f(s.Items)
		case len(s.AnyOf) == 2:
			f(s.AnyOf[0])
			f(s.AnyOf[1].Items)
		}
	}
}

func pattern(re string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Pattern = re }
}

func oneEnum(vals []any) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Type, s.Enum = "", vals }
}

func nameBounds(s *jsonschema.Schema) { s.MinLength, s.MaxLength = ptr(1), ptr(maxNameLen) }

// appPattern is an app given by short name or package.
func appPattern() string {
	names := make([]string, 0, len(Apps))
	for n := range Apps {
		names = append(names, n)
	}
	slices.Sort(names)
	return `^(` + strings.Join(names, "|") + `|` + strings.TrimSuffix(strings.TrimPrefix(packageRE.String(), "^"), "$") + `)$`
}

// generateSchema builds scenario.schema.json from the types; docs are the
// types' doc comments (yamlschema.DocsFromSource).
func generateSchema(docs map[string]string) ([]byte, error) {
	app := pattern(appPattern())
	role := pattern(roleRE.String())
	s := yamlschema.Schema(reflect.TypeFor[Scenario](), yamlschema.SchemaOptions{
		ID:    "https://agentoslab.github.io/agentlab/scenario.schema.json",
		Title: "agentlab scenario",
		Description: "One scenario of the lab's suite (lab/scenario/DSL.md), generated from the Go types of lab/scenario. " +
			"agentlab scenarios validate is the authority; this schema is for editors.",
		Docs:      docs,
		OneAsList: true,
		Types: map[reflect.Type]*jsonschema.Schema{
			reflect.TypeFor[Duration](): {Type: "string", Pattern: durationPattern, Description: "A Go duration: 500ms, 15s, 2m, 1h30m."},
			reflect.TypeFor[Value]():    {},
			reflect.TypeFor[Devices](): {Description: "How many devices, or their role names (the first is the default role).", AnyOf: []*jsonschema.Schema{
				{Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(MaxDevices))},
				{Type: "array", MinItems: ptr(1), MaxItems: ptr(MaxDevices), UniqueItems: true, Items: &jsonschema.Schema{Type: "string", Pattern: roleRE.String()}},
			}},
			reflect.TypeFor[Arg](): {Types: []string{"string", "number", "boolean", "object", "array"},
				Description: "Text, or a mapping or list sent as one JSON argument."},
			reflect.TypeFor[Script](): {Description: "A model script (runtime/model/script/FORMAT.md) written inline, or its file NAME.script.yaml.",
				AnyOf: []*jsonschema.Schema{{Type: "string", Pattern: `\.script\.ya?ml$`}, {Type: "object"}}},
			reflect.TypeFor[ModelScript](): {Description: "A model script written inline, or the name of one of scripts.",
				AnyOf: []*jsonschema.Schema{{Type: "string", Pattern: saveRE.String()}, {Type: "object"}}},
		},
		Build: map[reflect.Type]func(*yamlschema.SchemaGen) *jsonschema.Schema{
			reflect.TypeFor[PlanOp](): planOpSchema,
		},
		Fields: map[string]func(*jsonschema.Schema){
			"Scenario.name":           pattern(nameRE.String()),
			"Scenario.tags":           itemsOf(pattern(tagRE.String())),
			"Scenario.attempts":       func(s *jsonschema.Schema) { s.Minimum, s.Maximum = ptr(0.0), ptr(float64(MaxAttempts)) },
			"Scenario.consent_driver": oneEnum(enum(ConsentDrivers...)),
			"Scenario.vars":           func(s *jsonschema.Schema) { s.PropertyNames = &jsonschema.Schema{Pattern: saveRE.String()} },
			"Scenario.scripts":        func(s *jsonschema.Schema) { s.PropertyNames = &jsonschema.Schema{Pattern: saveRE.String()} },
			"Scenario.steps":          func(s *jsonschema.Schema) { s.MinItems = ptr(1) },
			"Needs.apps":              itemsOf(app),
			"Needs.model":             oneEnum(enum(ModelStub, ModelLive, ModelAny)),
			"Needs.kinds":             itemsOf(oneEnum(enum(DeviceKinds...))),
			"Check.kinds":             itemsOf(oneEnum(enum(DeviceKinds...))),
			"Needs.min_api":           func(s *jsonschema.Schema) { s.Minimum = ptr(0.0) },
			"Step.device":             role,
			"Step.save":               pattern(saveRE.String()),
			"Step.reset":              itemsOf(app),
			"Step.seed":               itemsOf(app),
			"Step.reboot":             func(s *jsonschema.Schema) { s.Type, s.Const = "", anyValue(true) },
			"Step.include": func(s *jsonschema.Schema) {
				*s = jsonschema.Schema{Description: s.Description, AnyOf: []*jsonschema.Schema{{Type: "string"}, {AllOf: s.AllOf, Ref: s.Ref}}}
			},
			"AppStep.name":          app,
			"CallersStep.allow":     app,
			"CallersStep.deny":      app,
			"CallersStep.revoke":    app,
			"CallersStep.remove":    app,
			"CallersAnswer.app":     app,
			"AskStep.app":           app,
			"PromptStep.mode":       oneEnum(enum(modes...)),
			"PromptStep.tool_scope": func(s *jsonschema.Schema) { s.MaxItems = ptr(maxToolScope) },
			"ToolRef.plugin":        func(s *jsonschema.Schema) { s.MinLength, s.MaxLength = ptr(1), ptr(maxScopeEntry) },
			"ToolRef.tool": func(s *jsonschema.Schema) {
				s.MinLength, s.MaxLength, s.Not = ptr(1), ptr(maxScopeEntry), &jsonschema.Schema{Pattern: "^mcp__"}
			},
			"MCPServer.name":             func(s *jsonschema.Schema) { s.MinLength = ptr(1) },
			"MCPServer.url":              func(s *jsonschema.Schema) { s.MinLength = ptr(1) },
			"Header.name":                func(s *jsonschema.Schema) { s.MinLength = ptr(1) },
			"ConsentStep.mode":           oneEnum(enum(ConsentModes...)),
			"ConsentStep.default":        oneEnum(enum(Choices...)),
			"ConsentRule.index":          func(s *jsonschema.Schema) { s.Minimum = ptr(1.0) },
			"ConsentRule.tool":           func(s *jsonschema.Schema) { s.Format = "regex" },
			"ConsentRule.caller":         func(s *jsonschema.Schema) { s.Format = "regex" },
			"ConsentRule.risk":           oneEnum(enum(risks...)),
			"ConsentRule.choice":         oneEnum(enum(Choices...)),
			"TapStep.card":               func(s *jsonschema.Schema) { s.Minimum = ptr(1.0) },
			"TapStep.choice":             oneEnum(enum(Choices[:len(Choices)-1]...)),
			"ApprovalStep.mode":          oneEnum(enum("always", "ask", "clear")),
			"RunStep.shell":              func(s *jsonschema.Schema) { s.MinLength = ptr(1) },
			"CheckName.name":             nameBounds,
			"Check.name":                 nameBounds,
			"Invariant.name":             nameBounds,
			"Invariant.device":           role,
			"Invariant.no_sms_sent":      func(s *jsonschema.Schema) { s.Type, s.Const = "", anyValue(true) },
			"Invariant.nothing_deleted":  itemsOf(oneEnum(enum(slices.Sorted(mapKeys(IDPaths))...))),
			"Condition.device":           role,
			"Condition.of":               oneEnum(enum(Ofs...)),
			"Condition.dump":             app,
			"Condition.all_of":           func(s *jsonschema.Schema) { s.MinItems = ptr(1) },
			"Condition.any_of":           func(s *jsonschema.Schema) { s.MinItems = ptr(1) },
			"Matcher.path":               func(s *jsonschema.Schema) { s.Not = &jsonschema.Schema{Pattern: `\$\{`} },
			"Matcher.matches":            func(s *jsonschema.Schema) { s.Format = "regex" },
			"InstallStep.caller":         pattern(packageRE.String()),
			"ACPClientStep.suite":        oneEnum(enum(ACPSuites...)),
			"InstallStep.shared_user_id": pattern(packageRE.String()),
			"InstallStep.key":            pattern(keyNameRE.String()),
			"CallerStep.app":             app,
			"IncludeStep.fragment":       pattern(fragmentNameRE.String()),
		},
		Structs: map[reflect.Type]func(*jsonschema.Schema){
			reflect.TypeFor[Scenario](): func(s *jsonschema.Schema) { s.Required = []string{"name", "steps"} },
			reflect.TypeFor[Step]():     func(s *jsonschema.Schema) { s.OneOf = oneOfRequired(StepKinds...) },
			reflect.TypeFor[Model](): func(s *jsonschema.Schema) {
				obj := *s
				*s = jsonschema.Schema{Description: obj.Description, AnyOf: []*jsonschema.Schema{{Const: anyValue(ModelLive)}, &obj}}
				obj.Description = ""
			},
			reflect.TypeFor[Matcher](): func(s *jsonschema.Schema) {
				obj := *s
				*s = jsonschema.Schema{Description: "A matcher, or a value meaning eq.", AnyOf: []*jsonschema.Schema{
					{Types: []string{"number", "string", "boolean", "null", "array"}}, &obj}}
			},
			reflect.TypeFor[Condition](): func(s *jsonschema.Schema) { s.OneOf = oneOfRequired(conditionKeys...) },
			reflect.TypeFor[Check](): func(s *jsonschema.Schema) {
				s.Required, s.OneOf = []string{"name"}, oneOfRequired(conditionKeys...)
			},
			reflect.TypeFor[Invariant](): func(s *jsonschema.Schema) {
				s.OneOf = oneOfRequired("nothing_deleted", "no_sms_sent", "cards_only", "condition")
			},
			reflect.TypeFor[CallersStep](): func(s *jsonschema.Schema) { s.MinProperties, s.MaxProperties = ptr(1), ptr(1) },
			reflect.TypeFor[RunStep]():     func(s *jsonschema.Schema) { s.OneOf = oneOfRequired("shell", "ctl") },
			reflect.TypeFor[ApprovalStep](): func(s *jsonschema.Schema) {
				s.Required, s.AnyOf = []string{"mode"}, []*jsonschema.Schema{required("tool"), required("plugin")}
			},
			reflect.TypeFor[ToggleStep]():  func(s *jsonschema.Schema) { s.MinProperties = ptr(1) },
			reflect.TypeFor[ConsentStep](): func(s *jsonschema.Schema) { s.MinProperties = ptr(1) },
			reflect.TypeFor[ConsentRule](): func(s *jsonschema.Schema) { s.Required, s.MinProperties = []string{"choice"}, ptr(2) },
			reflect.TypeFor[TapStep]():     func(s *jsonschema.Schema) { s.Required = []string{"card", "choice"} },
			reflect.TypeFor[AppStep]():     func(s *jsonschema.Schema) { s.Required = []string{"name", "args"} },
			reflect.TypeFor[AskStep]():     func(s *jsonschema.Schema) { s.Required = []string{"app"} },
			reflect.TypeFor[PromptStep]():  func(s *jsonschema.Schema) { s.OneOf = oneOfRequired("text", "script") },
			reflect.TypeFor[WaitStep](): func(s *jsonschema.Schema) {
				s.OneOf = []*jsonschema.Schema{required("until"), {Required: []string{"for"},
					Not: &jsonschema.Schema{AnyOf: oneOfRequired("until", "timeout", "interval", "check")}}}
			},
			reflect.TypeFor[CheckName]():     func(s *jsonschema.Schema) { s.Required = []string{"name"} },
			reflect.TypeFor[ToolRef]():       func(s *jsonschema.Schema) { s.Required = []string{"plugin", "tool"} },
			reflect.TypeFor[MCPServer]():     func(s *jsonschema.Schema) { s.Required = []string{"name", "url"} },
			reflect.TypeFor[Header]():        func(s *jsonschema.Schema) { s.Required = []string{"name"} },
			reflect.TypeFor[InstallStep]():   func(s *jsonschema.Schema) { s.Required = []string{"caller"} },
			reflect.TypeFor[ACPClientStep](): func(s *jsonschema.Schema) { s.Required = []string{"suite"} },
			reflect.TypeFor[CallerStep]():    func(s *jsonschema.Schema) { s.Required = []string{"plan"} },
			reflect.TypeFor[IncludeStep]():   func(s *jsonschema.Schema) { s.Required = []string{"fragment"} },
		},
	})
	return yamlschema.MarshalSchema(s)
}

// conditionKeys are the subjects and groups of a condition, one of which
// it holds.
var conditionKeys = []string{"of", "dump", "saved", "events", "shell", "timing", "all_of", "any_of"}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// planOpSchema is an operation of a plan: its kind alone, or the kind
// with its own fields (PlanOps), as YAML keys.
func planOpSchema(g *yamlschema.SchemaGen) *jsonschema.Schema {
	fields := g.Object(planFieldsType)
	bare := &jsonschema.Schema{Type: "string", Description: "An operation that needs no fields."}
	var alts []*jsonschema.Schema
	for _, op := range planOpNames {
		allowed := PlanOps[op]
		os := &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			Properties: map[string]*jsonschema.Schema{}, Required: PlanOpRequired[op]}
		for _, k := range allowed {
			os.Properties[k] = fields.Properties[k]
			os.PropertyOrder = append(os.PropertyOrder, k)
		}
		if len(PlanOpRequired[op]) == 0 {
			bare.Enum = append(bare.Enum, op)
			os.Types, os.Type = []string{"object", "null"}, ""
		}
		v := os
		if op == acptestclient.OpSleep {
			v = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string", Pattern: durationPattern}, os}}
		}
		alts = append(alts, &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			Required: []string{op}, Properties: map[string]*jsonschema.Schema{op: v}})
	}
	return &jsonschema.Schema{Description: "One operation of the test caller's plan: its kind alone (connect) or with its fields ({new: {as: s}}).",
		OneOf: append([]*jsonschema.Schema{bare}, alts...)}
}
