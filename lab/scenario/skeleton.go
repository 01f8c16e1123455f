package scenario

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Skeleton is the commented start of a new scenario named AREA/NAME, to
// be written to file (AREA/NAME.yaml of a suite): a copy of the test
// caller that prompts once and a check on its answer, every part of the
// language named where it goes. withFragment uses the suite's
// test-caller fragment for the setup; without it the setup is written
// out. The skeleton validates.
func Skeleton(name, file string, withFragment bool) ([]byte, error) {
	area, short, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(short, "/") || !nameRE.MatchString(name) || area == "" || short == "" {
		return nil, fmt.Errorf("%q: want AREA/NAME, lower case letters, digits, . _ and - (the file AREA/NAME.yaml)", name)
	}
	pkg := TestCaller[:strings.LastIndex(TestCaller, ".")] + "." + pkgWord(area) + "." + pkgWord(short)
	setup := fmt.Sprintf(`  # A copy of the test caller under its own package, installed and
  # authorized (the suite's test-caller.fragment.yaml).
  - include: {fragment: test-caller, with: {package: %s}}
`, pkg)
	if !withFragment {
		setup = fmt.Sprintf(`  # A copy of the test caller under its own package, asked once and
  # allowed by the owner.
  - install: {caller: %[1]s}
  - caller: {app: %[1]s, plan: [raw_open]}
  - callers: {allow: %[1]s}
`, pkg)
	}
	return []byte(fmt.Sprintf(`# yaml-language-server: $schema=../scenario.schema.json
#
# %[1]s: a new scenario. The language is lab/scenario/DSL.md; check it with
#   agentlab scenarios validate %[5]s
# and run it on a virtual device with
#   agentlab run --scenario %[1]s
name: %[1]s
description: >
  What this scenario shows, in a sentence or two (the report prints it).
tags: [%[2]s, qualification] # the area, qualification; nightly when a phone runs it quickly
# upstream: suite.py/case      # the upstream case it ports, if any
needs: {apps: [acptestclient]}
# Model scripts by name (runtime/model/script/FORMAT.md): a prompt sends
# one with script: NAME, the stub answers as it says.
scripts:
  greet:
    steps:
      - text: hello from the stub
setup:
%[3]ssteps:
  # The caller's plan: each operation with its fields (DSL.md, "caller").
  - caller:
      app: %[4]s
      plan:
        - connect
        - new: {as: s}
        - prompt: {session: s, script: greet, as: p}
    save: plan
checks:
  # Each named check appears in every report; map it to the upstream
  # check it ports with upstream: suite.py/case/check.
  - name: answered
    saved: plan
    path: .r.p.stopReason
    eq: end_turn
  - name: greeted
    saved: plan
    path: .r.p.text
    eq: hello from the stub
`, name, area, setup, pkg, filepath.ToSlash(file))), nil
}

// pkgWord makes a name part a package segment: letters and digits, a
// letter first.
func pkgWord(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	w := b.String()
	if w == "" || w[0] >= '0' && w[0] <= '9' {
		w = "s" + w
	}
	return w
}
