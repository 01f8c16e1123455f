package config

import _ "embed"

//go:embed lab.schema.json
var schemaJSON []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of lab.yaml, as
// checked in at lab/config/lab.schema.json.
func JSONSchema() []byte { return append([]byte(nil), schemaJSON...) }
