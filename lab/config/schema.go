package config

import _ "embed"

// lab.schema.json is generated from the types of this package by
// TestSchemaUpToDate (go generate), which fails when it is stale.
//
//go:generate go test -run ^TestSchemaUpToDate$ . -update

//go:embed lab.schema.json
var schemaJSON []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of lab.yaml, as
// checked in at lab/config/lab.schema.json.
func JSONSchema() []byte { return append([]byte(nil), schemaJSON...) }
