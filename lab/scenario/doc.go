// Package scenario is the lab's scenario language: YAML files that say
// what to do on one or more devices (reset and seed apps, authorize
// caller apps, install copies of the test caller and drive them with
// typed plans, ask the agent through a caller app, prompt over desktop
// ACP, answer consent cards, toggle plugins and tools, kill or restart
// parts of the runtime, reboot, wait) and which named checks must hold
// afterwards, each mapped to the upstream device-test check it ports.
// Everything is typed YAML: plans, model scripts (scripts:, checked with
// runtime/model/script's own rules) and shared setup (fragments, include:)
// included, so nothing hides in a string.
//
// DSL.md describes the language with one example per step, operation and
// check kind; scenarios/scenario.schema.json is its JSON Schema for
// editors, generated from the Go types (go generate ./lab/scenario; a test
// keeps it current).
//
// Parse reads one file strictly (internal/strictyaml): unknown or
// repeated keys, wrong types, aliases, unknown plan operations and
// fields, bad script steps, bad references between steps and checks, bad
// JSON paths and bad regular expressions are all reported at once, each
// as "file:line:column: field: what is wrong", in an *Error wrapping
// ErrInvalid. LoadAll reads a suite of files and directories.
//
// The package also holds the pure parts of evaluation: the JSON path
// language (ParsePath, Path.Select), matchers (Matcher.Match), groups of
// conditions (Condition.Eval), ${…} references (Expand) and the encoding
// of caller plans to the test caller's wire form (CallerStep.EncodePlan).
// Running steps against devices is lab/steps' job.
package scenario

//go:generate go test -run ^TestSchemaUpToDate$ . -update
