package config

import (
	"reflect"

	"github.com/agentoslab/agentlab/internal/yamlschema"
	"github.com/google/jsonschema-go/jsonschema"
)

// interpolation is a scalar written as ${NAME} or ${NAME:-default},
// which any value may be before interpolation.
const interpolation = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`

func orInterpolated(s *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{s, {Type: "string", Pattern: interpolation}}}
}

func enumOf(vals ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		s.Enum = make([]any, len(vals))
		for i, v := range vals {
			s.Enum[i] = v
		}
	}
}

func items(f func(*jsonschema.Schema)) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { f(s.Items) }
}

func requires(keys ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Required = keys }
}

// generateSchema builds lab.schema.json from the types; docs are their
// doc comments (yamlschema.DocsFromSource).
func generateSchema(docs map[string]string) ([]byte, error) {
	one := 1
	s := yamlschema.Schema(reflect.TypeFor[Config](), yamlschema.SchemaOptions{
		ID:    "https://agentoslab.github.io/agentlab/lab.schema.json",
		Title: "agentlab lab.yaml",
		Description: "Configuration of an agentlab run, generated from the Go types of lab/config. Scalars may use ${NAME} and " +
			"${NAME:-default} environment interpolation; $$ is a literal $.",
		Docs: docs,
		Types: map[reflect.Type]*jsonschema.Schema{
			reflect.TypeFor[int]():  orInterpolated(&jsonschema.Schema{Type: "integer"}),
			reflect.TypeFor[bool](): orInterpolated(&jsonschema.Schema{Type: "boolean"}),
			reflect.TypeFor[Duration](): {Type: "string", Description: "A Go duration: 30s, 5m.",
				Pattern: `^(([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+|.*` + interpolation + `.*)$`},
		},
		Fields: map[string]func(*jsonschema.Schema){
			"Config.output":      func(s *jsonschema.Schema) { s.MinLength = &one },
			"Virtual.rootMethod": enumOf(RootMethods...),
			"Pool.name":          func(s *jsonschema.Schema) { s.Pattern = poolName.String() },
			"Pool.abi":           enumOf(ABIs...),
			"Pool.rootMethods":   items(enumOf(RootMethods...)),
			"Model.mode":         enumOf(ModelStub, ModelLive, ModelRecord, ModelChaos),
			"Model.provider":     enumOf(ProviderOpenAI, ProviderAnthropic),
			"Model.keyEnv":       func(s *jsonschema.Schema) { s.Pattern = envName.String() },
			"Artifacts.policy":   enumOf(ArtifactsAlways, ArtifactsOnFailure, ArtifactsNever),
			"Build.abis":         items(enumOf(ABIs...)),
			"Build.tags":         items(func(s *jsonschema.Schema) { s.Pattern = buildTagRE.String() }),
		},
		Structs: map[reflect.Type]func(*jsonschema.Schema){
			reflect.TypeFor[ADBServer](): requires("server"),
			reflect.TypeFor[AVD]():       requires("name"),
			reflect.TypeFor[Container](): requires("image"),
			reflect.TypeFor[Pool]():      requires("name"),
			reflect.TypeFor[Emulator]():  func(s *jsonschema.Schema) { s.MinProperties, s.MaxProperties = &one, &one },
			reflect.TypeFor[Model](): func(s *jsonschema.Schema) {
				obj := *s
				*s = jsonschema.Schema{Description: "stub (default), live, record (live through the stub, recording every answer) or chaos (the stub's chaos model, from seed); " +
					"a live model's key comes from the environment variable keyEnv names, never from this file.", AnyOf: []*jsonschema.Schema{{Type: "string", Enum: []any{ModelStub, ModelLive, ModelRecord, ModelChaos}}, &obj}}
			},
		},
	})
	return yamlschema.MarshalSchema(s)
}
