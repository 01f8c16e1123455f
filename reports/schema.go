package reports

import (
	_ "embed"
	"slices"
)

//go:embed schema/results.schema.json
var jsonSchema []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of results.json for
// SchemaMajor, as checked in at reports/schema/results.schema.json.
func JSONSchema() []byte { return slices.Clone(jsonSchema) }
