package jsongen

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolSchemas are shaped like the tools the sample apps and plugins offer.
var toolSchemas = []struct {
	name   string
	schema string
	// breakable: the schema has a rule that Invalid breaks.
	breakable bool
}{
	{"echo", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, true},
	{"note_create", `{"type":"object","properties":{"title":{"type":"string","minLength":1,"maxLength":40},
		"content":{"type":"string","maxLength":200}},"required":["title"],"additionalProperties":false}`, true},
	{"alarm_create", `{"type":"object","properties":{"hour":{"type":"integer","minimum":0,"maximum":23},
		"minute":{"type":"integer","minimum":0,"maximum":59},
		"days":{"type":"array","items":{"enum":["MONDAY","TUESDAY","SUNDAY"]},"minItems":1,"maxItems":3}},
		"required":["hour","minute"]}`, true},
	{"event_create", `{"type":"object","properties":{"start":{"type":"string","format":"date-time"},
		"reminder_minutes":{"type":["integer","null"],"exclusiveMinimum":0,"exclusiveMaximum":1440},
		"where":{"type":"object","properties":{"lat":{"type":"number","minimum":-90,"maximum":90}},"required":["lat"]}},
		"required":["start","where"]}`, true},
	{"any_of", `{"type":"object","properties":{"id":{"anyOf":[{"type":"integer","minimum":1},{"type":"string","minLength":1}]}},
		"required":["id"]}`, true},
	{"all_of", `{"allOf":[{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"]},
		{"properties":{"b":{"const":"x"}}}]}`, true},
	{"no_args", `{"type":"object","properties":{}}`, false},
	{"empty", `{}`, false},
}

func resolve(t *testing.T, src string) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal([]byte(src), &s))
	r, err := s.Resolve(nil)
	require.NoError(t, err)
	return r
}

func instance(t *testing.T, b json.RawMessage) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v), "%s", b)
	require.NotNil(t, v, "arguments are an object: %s", b)
	return v
}

func TestGenerateAgainstTheSchema(t *testing.T) {
	for _, tc := range toolSchemas {
		t.Run(tc.name, func(t *testing.T) {
			rs := resolve(t, tc.schema)
			for seed := range uint64(200) {
				r := rand.New(rand.NewPCG(seed, 1))
				for _, k := range []Kind{Valid, Boundary} {
					got := Generate(r, json.RawMessage(tc.schema), k)
					assert.NoError(t, rs.Validate(instance(t, got)), "seed %d %s: %s", seed, k, got)
				}
				got := Generate(r, json.RawMessage(tc.schema), Invalid)
				v := instance(t, got)
				if tc.breakable {
					assert.Error(t, rs.Validate(v), "seed %d invalid: %s", seed, got)
				} else {
					assert.Contains(t, v, "chaos_unknown", "a schema with nothing to break gets an unknown property")
				}
			}
		})
	}
}

func TestGenerateReachesTheEdges(t *testing.T) {
	const alarm = `{"type":"object","properties":{"hour":{"type":"integer","minimum":0,"maximum":23},
		"title":{"type":"string","maxLength":5}},"required":["hour","title"]}`
	hours, lens := map[float64]bool{}, map[int]bool{}
	odd := false
	for seed := range uint64(100) {
		v := instance(t, Generate(rand.New(rand.NewPCG(seed, 2)), json.RawMessage(alarm), Boundary))
		hours[v["hour"].(float64)] = true
		title := []rune(v["title"].(string))
		lens[len(title)] = true
		for _, c := range title {
			if c > 0x7f || c < 0x20 {
				odd = true
			}
		}
	}
	assert.True(t, hours[0] && hours[23], "both ends of the range: %v", hours)
	assert.True(t, lens[0] && lens[5], "the shortest and longest strings: %v", lens)
	assert.True(t, odd, "boundary strings carry control, bidi or non-ASCII runes")
}

func TestGenerateIsDeterministic(t *testing.T) {
	for _, tc := range toolSchemas {
		for _, k := range []Kind{Valid, Boundary, Invalid} {
			a := Generate(rand.New(rand.NewPCG(7, 7)), json.RawMessage(tc.schema), k)
			b := Generate(rand.New(rand.NewPCG(7, 7)), json.RawMessage(tc.schema), k)
			assert.Equal(t, string(a), string(b), "%s %s", tc.name, k)
		}
	}
}

func TestGenerateAnyInputIsAnObject(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `"x"`, `{"type":"string"}`, `{"type":"array","items":{"type":"object"}}`,
		`{"type":"object","properties":{"a":{"minLength":1e300}}}`, `{"properties":{"deep":{"properties":{"deep":{"properties":{}}}}}}`} {
		for _, k := range []Kind{Valid, Boundary, Invalid} {
			instance(t, Generate(rand.New(rand.NewPCG(1, 1)), json.RawMessage(in), k))
		}
	}
}

func FuzzGenerate(f *testing.F) {
	for _, tc := range toolSchemas {
		f.Add([]byte(tc.schema), uint64(1), uint8(0))
	}
	f.Add([]byte(`{"type":"array","minItems":1e9,"items":{"items":{"items":{}}}}`), uint64(3), uint8(2))
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64, kind uint8) {
		k := Kind(kind % 3)
		a := Generate(rand.New(rand.NewPCG(seed, 0)), schema, k)
		require.Less(t, len(a), 1<<20, "arguments stay small")
		var v map[string]any
		require.NoError(t, json.Unmarshal(a, &v), "%s", a)
		require.NotNil(t, v)
		b := Generate(rand.New(rand.NewPCG(seed, 0)), schema, k)
		require.Equal(t, string(a), string(b), "one seed, one answer")
	})
}
