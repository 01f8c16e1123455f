// Package scenarios is the lab's scenario suite: YAML scenarios under
// one folder per area (third-party/, desktop/, quota/, security/, fault/,
// notes/, sms/, ext/, consent/, apps/, platform/, aci/), their model scripts, and
// upstream/<suite>.txt, the upstream device-test checks of spec §10 the
// suite ports, one "suite/case/check" per line.
//
// The package holds no code the lab runs; its tests keep the suite
// honest: every scenario is valid (the lab's validator and the JSON
// Schema editors use), names are unique, tags come from the documented
// set, every listed upstream check is covered by a named check and every
// named check's upstream is listed, README.md's mapping table is the one
// the scenarios imply (go test ./scenarios -update rewrites it), and no
// file holds a test-caller plan or a model script inside a string or a
// line over 160 characters. *.fragment.yaml are the setup fragments
// scenarios include.
package scenarios
