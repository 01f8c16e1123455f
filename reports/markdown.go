package reports

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// writeMarkdown writes summary.md: the headline and counts, a table of
// devices, then failures (with their failing checks and evidence), lab
// faults, inconclusive, flaky and skipped scenarios, and last a table of
// scenarios per device.
func writeMarkdown(w io.Writer, r *Run) error {
	bw := bufio.NewWriter(w)
	s := r.Summary
	fmt.Fprintf(bw, "# agentlab run %s\n\n", mdText(r.RunID))
	fmt.Fprintf(bw, "**%s** (exit code %d)\n\n", headline(s), s.ExitCode)
	fmt.Fprintf(bw, "%s.\n\n", countsLine(s))
	fmt.Fprintf(bw, "| | |\n|---|---|\n")
	fmt.Fprintf(bw, "| started | %s |\n", stamp(r.StartedAt))
	fmt.Fprintf(bw, "| finished | %s |\n", stamp(r.FinishedAt))
	if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() {
		fmt.Fprintf(bw, "| duration | %s |\n", humanDuration(r.FinishedAt.Sub(r.StartedAt)))
	}
	fmt.Fprintf(bw, "| lab | %s |\n", mdCell(r.LabVersion))
	fmt.Fprintf(bw, "| host | %s |\n", mdCell(r.Host))
	fmt.Fprintf(bw, "| config | %s |\n", mdCode(r.ConfigDigest))
	fmt.Fprintf(bw, "| model | %s |\n", mdCell(modelLine(r.Model)))
	fmt.Fprintf(bw, "| selection | %s |\n", mdCell(selectionLine(r.Selection)))
	fmt.Fprintf(bw, "| attempts | %d (%d lost to lab faults) |\n", s.Attempts, s.LabFaultAttempts)
	fmt.Fprintf(bw, "| checks | %s |\n\n", checksLine(s))
	if suites := SuiteCounts(r); len(suites) > 0 {
		bw.WriteString("## Upstream suites\n\n| suite | passed | failed | skipped |\n|---|---:|---:|---:|\n")
		for _, su := range suites {
			fmt.Fprintf(bw, "| %s | %d/%d | %d | %d |\n", mdCode(su.Suite), su.Passed, su.Checks, su.Failed, su.Skipped)
		}
		bw.WriteString("\n")
	}

	groups := groupByDevice(r)
	bw.WriteString("## Devices\n\n")
	bw.WriteString("| device | kind | model | API | ABI | root | runtime | pass | fail | flaky | error | skipped | inconclusive | health |\n")
	bw.WriteString("|---|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, g := range groups {
		d := g.Device
		if d == nil {
			d = &Device{Serial: g.Serial}
		}
		fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %d | %s |\n",
			mdCell(deviceTitle(g)), mdCell(string(d.Kind)), mdCell(d.Model), apiLevel(d.APILevel), mdCell(d.ABI),
			mdCell(d.RootMethod), mdCell(d.RuntimeVersion),
			g.Counts[VerdictPass], g.Counts[VerdictFail], g.Counts[VerdictFlaky], g.Counts[VerdictError],
			g.Counts[VerdictSkipped], g.Counts[VerdictInconclusive], mdCell(healthWord(g.Device)))
	}
	bw.WriteString("\n")

	bySev := bySeverity(r)
	// section lists the scenarios of verdict v; a list-style body gets a
	// blank line after the list.
	section := func(title string, v Verdict, list bool, body func(*Scenario)) {
		var these []*Scenario
		for _, sc := range bySev {
			if sc.Verdict == v {
				these = append(these, sc)
			}
		}
		if len(these) == 0 {
			return
		}
		fmt.Fprintf(bw, "## %s (%d)\n\n", title, len(these))
		for _, sc := range these {
			body(sc)
		}
		if list {
			bw.WriteString("\n")
		}
	}
	section("Failures", VerdictFail, false, func(sc *Scenario) {
		fmt.Fprintf(bw, "### %s\n\n", mdText(sc.Name))
		scenarioFacts(bw, sc)
		if failed := sc.FailedChecks(); len(failed) > 0 {
			bw.WriteString("| failing check | detail | evidence | upstream |\n|---|---|---|---|\n")
			for _, c := range failed {
				fmt.Fprintf(bw, "| %s | %s | %s | %s |\n", mdCell(c.Name), mdCell(c.Detail), mdEvidence(c), mdCode(c.Upstream))
			}
			bw.WriteString("\n")
		}
		mdAttempts(bw, sc)
	})
	// Lab faults: scenarios lost to the lab, then attempts lost to the lab
	// whose scenario was re-queued and decided elsewhere, then quarantines.
	var requeued []string
	for _, sc := range bySev {
		if sc.Verdict == VerdictError {
			continue
		}
		for _, a := range sc.Attempts {
			if a.LabFault {
				requeued = append(requeued, fmt.Sprintf("- %s: %s; re-queued, final verdict %s\n", mdText(sc.Name), mdText(attemptLine(a)), sc.Verdict))
			}
		}
	}
	var quarantined []string
	for i := range r.Devices {
		if d := &r.Devices[i]; d.Quarantined() {
			quarantined = append(quarantined, fmt.Sprintf("- %s quarantined: %s\n", mdText(d.Serial), mdText(oneLine(d.QuarantineReason))))
		}
	}
	if s.Error > 0 || len(requeued) > 0 || len(quarantined) > 0 {
		fmt.Fprintf(bw, "## Lab faults (%s, %s)\n\n", plural(s.Error, "scenario"), plural(s.LabFaultAttempts, "attempt"))
		for _, sc := range bySev {
			if sc.Verdict != VerdictError {
				continue
			}
			fmt.Fprintf(bw, "### %s\n\n", mdText(sc.Name))
			scenarioFacts(bw, sc)
			mdAttempts(bw, sc)
		}
		if len(requeued) > 0 {
			bw.WriteString("Re-queued after a lab fault:\n\n")
			for _, l := range requeued {
				bw.WriteString(l)
			}
			bw.WriteString("\n")
		}
		if len(quarantined) > 0 {
			bw.WriteString("Devices taken out of the pool:\n\n")
			for _, l := range quarantined {
				bw.WriteString(l)
			}
			bw.WriteString("\n")
		}
	}
	section("Inconclusive", VerdictInconclusive, true, func(sc *Scenario) {
		fmt.Fprintf(bw, "- **%s** on %s: %s", mdText(sc.Name), mdText(strings.Join(sc.Devices, ", ")), mdText(reasonOf(sc)))
		if sc.PersonTouches > 0 {
			fmt.Fprintf(bw, " (%s)", plural(sc.PersonTouches, "touch"))
		}
		bw.WriteString("\n")
	})
	section("Flaky", VerdictFlaky, true, func(sc *Scenario) {
		fmt.Fprintf(bw, "- **%s**: passed on attempt %d", mdText(sc.Name), len(sc.Attempts))
		for _, a := range sc.Attempts[:max(len(sc.Attempts)-1, 0)] {
			fmt.Fprintf(bw, "; %s", mdText(attemptLine(a)))
		}
		bw.WriteString("\n")
	})
	section("Skipped", VerdictSkipped, true, func(sc *Scenario) {
		fmt.Fprintf(bw, "- **%s**: %s\n", mdText(sc.Name), mdText(reasonOf(sc)))
	})

	bw.WriteString("## Scenarios by device\n\n")
	for _, g := range groups {
		fmt.Fprintf(bw, "### %s\n\n", mdText(deviceTitle(g)))
		if len(g.Scenarios) == 0 {
			bw.WriteString("No scenarios.\n\n")
			continue
		}
		bw.WriteString("| verdict | scenario | attempts | checks | duration | reason |\n|---|---|---:|---:|---:|---|\n")
		for _, sc := range g.Scenarios {
			fmt.Fprintf(bw, "| %s | %s | %d | %d/%d | %s | %s |\n", sc.Verdict, mdCell(sc.Name), len(sc.Attempts),
				passedChecks(sc.Checks), len(sc.Checks), humanDuration(sc.Duration()), mdCell(reasonOf(sc)))
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}

func scenarioFacts(bw *bufio.Writer, sc *Scenario) {
	fmt.Fprintf(bw, "- file: %s\n", mdCode(sc.File))
	if len(sc.Devices) > 0 {
		fmt.Fprintf(bw, "- devices: %s\n", mdText(strings.Join(sc.Devices, ", ")))
	}
	if r := reasonOf(sc); r != "" {
		fmt.Fprintf(bw, "- reason: %s\n", mdText(r))
	}
	fmt.Fprintf(bw, "- checks: %d/%d passed; duration %s\n", passedChecks(sc.Checks), len(sc.Checks), humanDuration(sc.Duration()))
	for _, a := range sc.Artifacts {
		fmt.Fprintf(bw, "- artifact: [%s](%s) (%s, %s)\n", mdText(a.Path), mdLink(a.Path), mdText(string(a.Kind)), plural64(a.Size, "byte"))
	}
	bw.WriteString("\n")
}

func mdAttempts(bw *bufio.Writer, sc *Scenario) {
	if len(sc.Attempts) < 2 {
		return
	}
	bw.WriteString("Attempts:\n\n")
	for _, a := range sc.Attempts {
		fmt.Fprintf(bw, "1. %s\n", mdText(attemptLine(a)))
	}
	bw.WriteString("\n")
}

func deviceTitle(g *deviceGroup) string {
	if g.Device == nil || g.Device.Name == "" || g.Device.Name == g.Serial {
		return g.Serial
	}
	return g.Serial + " (" + g.Device.Name + ")"
}

func apiLevel(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// healthWord is a device's state at the end of the run.
func healthWord(d *Device) string {
	switch {
	case d == nil:
		return "not in inventory"
	case d.Quarantined():
		return "quarantined: " + oneLine(d.QuarantineReason)
	case len(d.Health) == 0:
		return "unknown"
	}
	return d.Health[len(d.Health)-1].State
}

// mdEvidence renders evidence, linking it when it points at an artifact.
func mdEvidence(c Check) string {
	if p, ok := c.EvidenceArtifact(); ok {
		return fmt.Sprintf("[%s](%s)", mdText(p), mdLink(p))
	}
	return mdCell(c.Evidence)
}

var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "|", `\|`, "#", `\#`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// mdText escapes s so Markdown shows it literally, on one line.
func mdText(s string) string { return mdReplacer.Replace(s) }

// mdCell is mdText for a table cell.
func mdCell(s string) string { return mdReplacer.Replace(oneLine(s)) }

// mdCode renders s as a code span that is also safe in a table cell; empty
// for an empty s.
func mdCode(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.NewReplacer("`", "'", "|", `\|`).Replace(oneLine(s)) + "`"
}

// mdLink makes a relative path safe as a link target.
func mdLink(p string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(p)
}
