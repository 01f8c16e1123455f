// Package config reads lab.yaml, the lab's configuration: where devices
// come from (adb servers, virtual devices, emulators), how they are
// pooled, which model the runtime talks to, how scenarios are selected,
// retried, timed out and sharded, what evidence is kept and where output
// goes.
//
// # Reading
//
// Parse reads a document from an io.Reader. It starts from the built-in
// defaults (the embedded default configuration, DefaultYAML): every
// top-level section the document names replaces that section of the
// defaults, and fields a section leaves out take their per-field
// defaults. Parsing is strict (the project's one strict YAML decoder,
// internal/strictyaml): an unknown or repeated key is an error naming the
// file, line and column, with a "did you mean" for a near miss. Scalar
// values are interpolated first:
//
//	${NAME}           the value of the environment variable NAME (an error if unset)
//	${NAME:-default}  NAME's value, or default when NAME is unset or empty
//	$$                a literal $
//
// After decoding, the whole configuration is validated; every problem is
// reported, each as "file:line:col: field: what is wrong" (the line left
// out when the field came from the defaults). A *Error carries them as a
// list.
//
// Load picks the file: the path given, else lab.yaml in the working
// directory, else the embedded default (two virtual devices, the model
// stub, the whole suite).
//
// # Keys
//
// A live model's key is never written in lab.yaml: model.keyEnv names the
// environment variable that holds it, and Model.Key reads it. A key in the
// file is rejected.
//
// # Schema
//
// lab.schema.json (JSONSchema) is the JSON Schema of the file, for editors,
// generated from the Go types (go generate ./lab/config; a test fails when
// it is stale).
package config
