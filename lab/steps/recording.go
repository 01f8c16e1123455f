package steps

import (
	"context"
	"maps"
	"time"
)

// Recorder is a model stub that records a live provider's answers
// (lab.yaml model.mode record); *modelstub.Stub is one when started with
// an upstream. Collect writes each device's recording as a model script.
type Recorder interface {
	Recording(ctx context.Context, token string) ([]byte, bool, error)
}

// RecordingFile is the name of the manifest a recorded attempt's
// artifacts hold; agentlab replay reads it.
const RecordingFile = "recording.yaml"

// ScriptFile is the artifact a device's recorded model script is written
// to; prefix is "" for a one-device scenario, else "<role>-".
func ScriptFile(prefix string) string { return prefix + "model-script.yaml" }

// Recording is what a recorded attempt did, beside its model scripts:
// enough for agentlab replay to run it again with the recorded answers.
type Recording struct {
	// Scenario is the scenario's name; File the path it was read from.
	Scenario string `yaml:"scenario"`
	File     string `yaml:"file"`
	Attempt  int    `yaml:"attempt"`
	// Verdict is the attempt's outcome as the steps saw it: pass or fail
	// (the runner's verdict is in results.json).
	Verdict string    `yaml:"verdict"`
	Failure string    `yaml:"failure,omitempty"`
	Started time.Time `yaml:"started"`
	// Scripts are the model script artifacts by device role.
	Scripts map[string]string `yaml:"scripts"`
	// Steps are the app, consent and other actions the attempt took, in
	// order (the scenario's steps as they ran).
	Steps []RecordedStep `yaml:"steps"`
	// Consent are the consent cards the attempt saw and the answers the
	// lab gave, per device role.
	Consent map[string][]RecordedCard `yaml:"consent,omitempty"`
}

// RecordedStep is one step that ran.
type RecordedStep struct {
	Index  int    `yaml:"index"`
	Kind   string `yaml:"kind"`
	Name   string `yaml:"name,omitempty"`
	Device string `yaml:"device,omitempty"`
	Error  string `yaml:"error,omitempty"`
}

// RecordedCard is one consent card and the answer taken.
type RecordedCard struct {
	Tool     string `yaml:"tool"`
	Answer   string `yaml:"answer,omitempty"`
	By       string `yaml:"by,omitempty"`
	Accepted bool   `yaml:"accepted,omitempty"`
	Pending  bool   `yaml:"pending,omitempty"`
}

// recording is the attempt's manifest without its scripts.
func (r *Result) recording(steps []StepRecord) *Recording {
	a := r.run
	man := &Recording{Scenario: a.sc.Name, File: a.sc.File, Attempt: a.env.Attempt, Verdict: "pass", Started: r.Start,
		Scripts: map[string]string{}, Steps: []RecordedStep{}}
	if r.Failed() {
		man.Verdict = "fail"
		if r.Err != nil {
			man.Failure = r.Err.Error()
		}
	}
	for _, st := range steps {
		man.Steps = append(man.Steps, RecordedStep{Index: st.Index, Kind: st.Kind, Name: st.Name, Device: st.Role, Error: st.Error})
	}
	a.mu.Lock()
	recs := maps.Clone(a.consent)
	a.mu.Unlock()
	for role, rec := range recs {
		for _, c := range rec.snapshot() {
			if man.Consent == nil {
				man.Consent = map[string][]RecordedCard{}
			}
			man.Consent[role] = append(man.Consent[role], RecordedCard{Tool: c.ToolName, Answer: c.AnsweredWith, By: c.AnsweredBy,
				Accepted: c.Accepted, Pending: c.Pending})
		}
	}
	return man
}
