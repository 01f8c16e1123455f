package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"time"
)

// report.html is one file: inline CSS, an inline SVG timeline, <details>
// sections and CSS-only verdict filters, so it reads the same with
// JavaScript off; the little script only adds "expand/collapse all".

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"stamp":    stamp,
	"duration": humanDuration,
}).Parse(htmlSource))

type htmlView struct {
	Run       *Run
	Headline  string
	ExitCode  int
	Duration  string
	Model     string
	Selection string
	Counts    []htmlCount
	Devices   []htmlDevice
	Timeline  htmlTimeline
	Scenarios []htmlScenario
}

type htmlCount struct {
	Verdict Verdict
	N       int
}

type htmlDevice struct {
	Title, Serial, Kind, Model, API, ABI, Root, Runtime, State string
	Quarantined                                                bool
	Counts                                                     []htmlCount
	Health                                                     []HealthRecord
}

type htmlTimeline struct {
	Width, Height int
	LabelWidth    int
	Rows          []htmlRow
	Ticks         []htmlTick
}

type htmlRow struct {
	Y, TextY int
	Label    string
	Bars     []htmlBar
}

type htmlBar struct {
	X, Y, W, H int
	Class      string
	Title      string
	Href       string
}

type htmlTick struct {
	X     int
	Label string
}

type htmlScenario struct {
	ID        string
	S         *Scenario
	Open      bool
	Reason    string
	Device    string
	Checks    []htmlCheck
	Attempts  []htmlAttempt
	Artifacts []Artifact
}

type htmlCheck struct {
	Check
	EvidencePath string
}

type htmlAttempt struct {
	A      *Attempt
	Line   string
	Failed []htmlCheck
}

func writeHTML(w io.Writer, r *Run) error {
	s := r.Summary
	v := htmlView{
		Run:       r,
		Headline:  headline(s),
		ExitCode:  s.ExitCode,
		Model:     modelLine(r.Model),
		Selection: selectionLine(r.Selection),
	}
	if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() {
		v.Duration = humanDuration(r.FinishedAt.Sub(r.StartedAt))
	}
	for _, vd := range Verdicts {
		v.Counts = append(v.Counts, htmlCount{vd, s.Count(vd)})
	}
	ids := make(map[*Scenario]string, len(r.Scenarios))
	for i := range r.Scenarios {
		ids[&r.Scenarios[i]] = "sc-" + strconv.Itoa(i+1)
	}
	for _, g := range groupByDevice(r) {
		d := htmlDevice{Title: deviceTitle(g), Serial: g.Serial, State: healthWord(g.Device)}
		if dev := g.Device; dev != nil {
			d.Kind, d.Model, d.API, d.ABI = string(dev.Kind), dev.Model, apiLevel(dev.APILevel), dev.ABI
			d.Root, d.Runtime, d.Quarantined, d.Health = dev.RootMethod, dev.RuntimeVersion, dev.Quarantined(), dev.Health
		}
		for _, vd := range Verdicts {
			d.Counts = append(d.Counts, htmlCount{vd, g.Counts[vd]})
		}
		v.Devices = append(v.Devices, d)
	}
	v.Timeline = timeline(r, ids)
	for _, sc := range bySeverity(r) {
		hs := htmlScenario{
			ID:        ids[sc],
			S:         sc,
			Open:      sc.Verdict != VerdictPass && sc.Verdict != VerdictSkipped,
			Reason:    reasonOf(sc),
			Device:    sc.PrimaryDevice(),
			Checks:    htmlChecks(sc.Checks),
			Artifacts: sc.Artifacts,
		}
		for i := range sc.Attempts {
			a := &sc.Attempts[i]
			ha := htmlAttempt{A: a, Line: attemptLine(*a)}
			for _, c := range htmlChecks(a.Checks) {
				if !c.OK {
					ha.Failed = append(ha.Failed, c)
				}
			}
			hs.Attempts = append(hs.Attempts, ha)
		}
		v.Scenarios = append(v.Scenarios, hs)
	}
	return htmlTemplate.Execute(w, v)
}

func htmlChecks(cs []Check) []htmlCheck {
	out := make([]htmlCheck, len(cs))
	for i, c := range cs {
		out[i].Check = c
		out[i].EvidencePath, _ = c.EvidenceArtifact()
	}
	return out
}

// Timeline geometry, in SVG user units.
const (
	tlWidth      = 1000
	tlLabelWidth = 170
	tlRowHeight  = 26
	tlAxisHeight = 22
	tlTicks      = 5
)

// timeline lays out one row per device: leases as a pale band, other
// events as bars inside it, coloured by kind or verdict, each with a
// tooltip; scenario bars link to the scenario's section.
func timeline(r *Run, ids map[*Scenario]string) htmlTimeline {
	t0, t1 := r.StartedAt, r.FinishedAt
	for i := range r.Devices {
		for _, e := range r.Devices[i].Timeline {
			if t0.IsZero() || e.Start.Before(t0) {
				t0 = e.Start
			}
			end := e.End
			if end.IsZero() {
				end = e.Start
			}
			if end.After(t1) {
				t1 = end
			}
		}
	}
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Second
	}
	plot := tlWidth - tlLabelWidth - 10
	x := func(t time.Time) int {
		return tlLabelWidth + int(float64(plot)*float64(t.Sub(t0))/float64(span))
	}
	byName := make(map[string]string, len(r.Scenarios))
	for i := range r.Scenarios {
		byName[r.Scenarios[i].Name] = ids[&r.Scenarios[i]]
	}
	tl := htmlTimeline{Width: tlWidth, LabelWidth: tlLabelWidth}
	for i := range r.Devices {
		d := &r.Devices[i]
		y := tlAxisHeight + i*tlRowHeight
		row := htmlRow{Y: y, TextY: y + tlRowHeight/2 + 4, Label: d.Serial}
		for _, e := range d.Timeline {
			bar := htmlBar{X: x(e.Start), Class: "ev ev-" + string(e.Kind)}
			if e.End.IsZero() {
				bar.W = 3
				bar.X--
			} else {
				bar.W = max(x(e.End)-bar.X, 2)
			}
			switch e.Kind {
			case EventLease:
				bar.Y, bar.H = y+1, tlRowHeight-2
			default:
				bar.Y, bar.H = y+5, tlRowHeight-10
			}
			if e.Verdict != "" {
				bar.Class += " v-" + string(e.Verdict)
			}
			bar.Title = eventTitle(e)
			if e.Kind == EventScenario {
				if id := byName[e.Scenario]; id != "" {
					bar.Href = "#" + id
				}
			}
			row.Bars = append(row.Bars, bar)
		}
		tl.Rows = append(tl.Rows, row)
	}
	tl.Height = tlAxisHeight + len(r.Devices)*tlRowHeight + 4
	for i := 0; i <= tlTicks; i++ {
		at := t0.Add(span * time.Duration(i) / tlTicks)
		tl.Ticks = append(tl.Ticks, htmlTick{X: x(at), Label: at.UTC().Format("15:04:05")})
	}
	return tl
}

func eventTitle(e Event) string {
	s := string(e.Kind) + ": " + e.Label
	if e.Scenario != "" {
		s += fmt.Sprintf(" (%s, attempt %d)", e.Scenario, e.Attempt)
	}
	if e.Verdict != "" {
		s += " → " + string(e.Verdict)
	}
	s += "\n" + stamp(e.Start)
	if !e.End.IsZero() {
		s += " – " + stamp(e.End) + " (" + humanDuration(e.End.Sub(e.Start)) + ")"
	}
	if e.Detail != "" {
		s += "\n" + e.Detail
	}
	return s
}
