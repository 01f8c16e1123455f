// Package scenario is the lab's scenario language: YAML files that say
// what to do on one or more devices (reset and seed apps, authorize
// caller apps, ask the agent through a caller app, prompt over desktop
// ACP, answer consent cards, toggle plugins and tools, kill or restart
// parts of the runtime, reboot, wait) and which named checks must hold
// afterwards, each mapped to the upstream device-test check it ports.
//
// DSL.md describes the language with one example per step and check
// kind; scenarios/scenario.schema.json is its JSON Schema for editors
// (a test keeps both in step with the Go types).
//
// Parse reads one file strictly: unknown or repeated keys, wrong types,
// aliases, bad references between steps and checks, bad JSON paths and
// bad regular expressions are all reported at once, each as
// "file:line:column: field: what is wrong", in an *Error wrapping
// ErrInvalid. LoadAll reads a suite of files and directories.
//
// The package also holds the pure parts of evaluation: the JSON path
// language (ParsePath, Path.Select), matchers (Matcher.Match), groups of
// conditions (Condition.Eval) and ${…} references (Expand). Running steps
// against devices is lab/steps' job.
package scenario
