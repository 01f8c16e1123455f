// Package reports holds the results model of an agentlab run and everything
// that turns it into something a person or a CI system reads.
//
// A Run is the versioned document written as results.json (SCHEMA.md
// describes every field and the versioning rule; schema/results.schema.json is
// its JSON Schema). From a Run the package renders JUnit XML, summary.md, a
// self-contained report.html, a console table and an upstream-shaped check
// list; Load re-reads a results.json so any format can be rendered again later.
// ExitCode maps a Run to the lab's exit-code contract, Diff compares two runs,
// Merge joins the runs of the shards of one run, WriteTable draws every
// table of the lab's command line as the console report draws its own,
// and ScanForSecrets checks artifacts and reports for leaked secrets before a
// run is declared done.
//
// The package is pure: it never talks to devices and never reads the
// environment, except that console colour follows the NO_COLOR convention.
package reports
