package steps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/reports"
	"gopkg.in/yaml.v3"
)

// Runtime logs on the device: the supervisor's and the runtime's.
var deviceLogs = map[string]string{
	"supervisor.log": "/data/agentos/supervisor/supervisor.log",
	"runtime.log":    "/data/agentos/supervisor/runtime.log",
}

// maxLogSlice bounds a log slice kept per attempt.
const maxLogSlice = 4 << 20

// markLogs notes how long the runtime's logs are, so that the attempt's
// artifacts hold only what it added.
func (a *attempt) markLogs(ctx context.Context, t *Target) error {
	names := make([]string, 0, len(deviceLogs))
	for n := range deviceLogs {
		names = append(names, n)
	}
	slices.Sort(names)
	var cmd strings.Builder
	for _, n := range names {
		fmt.Fprintf(&cmd, "stat -c '%%s' %s 2>/dev/null || echo 0; ", deviceLogs[n])
	}
	res, err := t.Device.Su(ctx, cmd.String())
	if err != nil {
		if errors.Is(err, devices.ErrNoRoot) || IsLabFault(err) {
			return labFault("read the log sizes", err)
		}
		return nil
	}
	offs := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for i := 0; sc.Scan() && i < len(names); i++ {
		n, _ := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		offs[names[i]] = n
	}
	a.mu.Lock()
	a.offsets[t.Role] = offs
	a.mu.Unlock()
	return nil
}

// Collect writes the attempt's artifacts under env.RunDir/env.RelDir:
// per device the runtime's and the supervisor's log slices, the app
// dumps the scenario touched, device properties, logcat since the start
// and a screenshot where the device has them, the consent cards and the
// runtime's consent audit; the prompts' event streams, the model requests
// the stub recorded and the step log. What a device cannot give is left
// out; errors are collected and returned with the artifacts written.
func (r *Result) Collect(ctx context.Context) ([]reports.Artifact, error) {
	a := r.run
	if a == nil {
		return nil, nil
	}
	env := a.env
	dir := filepath.Join(env.RunDir, filepath.FromSlash(env.RelDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var arts []reports.Artifact
	var errs []error
	write := func(name string, kind reports.ArtifactKind, data []byte) {
		rel := path.Join(env.RelDir, name)
		if err := os.WriteFile(filepath.Join(env.RunDir, filepath.FromSlash(rel)), data, 0o644); err != nil {
			errs = append(errs, err)
			return
		}
		art, err := reports.ArtifactOf(env.RunDir, rel, kind)
		if err != nil {
			errs = append(errs, err)
			return
		}
		arts = append(arts, art)
	}
	writeJSON := func(name string, kind reports.ArtifactKind, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			errs = append(errs, err)
			return
		}
		write(name, kind, append(b, '\n'))
	}
	multi := len(env.Targets) > 1
	for _, t := range env.Targets {
		prefix := ""
		if multi {
			prefix = t.Role + "-"
		}
		a.mu.Lock()
		offs := a.offsets[t.Role]
		apps := make([]string, 0, len(a.dumps))
		for app := range a.dumps {
			apps = append(apps, app)
		}
		rec := a.consent[t.Role]
		a.mu.Unlock()
		for _, app := range a.sc.Needs.Apps {
			if !slices.Contains(apps, app) {
				apps = append(apps, app)
			}
		}
		slices.Sort(apps)
		for name, remote := range deviceLogs {
			res, err := t.Device.Su(ctx, fmt.Sprintf("tail -c +%d %s 2>/dev/null | head -c %d", offs[name]+1, remote, maxLogSlice))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			if len(res.Stdout) > 0 {
				write(prefix+name, reports.ArtifactLog, res.Stdout)
			}
		}
		for _, app := range apps {
			if v, err := a.dump(ctx, t, app); err == nil {
				writeJSON(prefix+"dump-"+app+".json", reports.ArtifactDump, v)
			} else {
				errs = append(errs, fmt.Errorf("dump %s: %w", app, err))
			}
		}
		if v, err := ctlJSON(ctx, t, "consent", "recent"); err == nil {
			writeJSON(prefix+"consent-recent.json", reports.ArtifactConsentAudit, v)
		} else {
			errs = append(errs, fmt.Errorf("consent recent: %w", err))
		}
		if rec != nil {
			writeJSON(prefix+"consent-cards.json", reports.ArtifactConsentAudit, rec.snapshot())
		}
		if res, err := t.Device.Shell(ctx, "getprop"); err == nil {
			write(prefix+"props.txt", reports.ArtifactProps, res.Stdout)
		} else {
			errs = append(errs, fmt.Errorf("getprop: %w", err))
		}
		if !env.NoLogcat {
			if b, err := t.Device.Logs(ctx, r.Start.Add(-time.Second)); err == nil {
				write(prefix+"logcat.txt", reports.ArtifactLogcat, b)
			} else if !errors.Is(err, devices.ErrUnsupported) {
				errs = append(errs, fmt.Errorf("logcat: %w", err))
			}
		}
		if !env.NoScreenshots {
			if b, err := t.Device.Screenshot(ctx); err == nil {
				write(prefix+"screenshot.png", reports.ArtifactScreenshot, b)
			} else if !errors.Is(err, devices.ErrUnsupported) {
				errs = append(errs, fmt.Errorf("screenshot: %w", err))
			}
		}
		if env.Stub != nil && t.StubToken != "" {
			reqs, dropped := env.Stub.Requests(t.StubToken)
			writeJSON(prefix+"model-requests.json", reports.ArtifactOther, map[string]any{"requests": reqs, "dropped": dropped})
		}
	}
	// The cards the ui driver answered, as the owner saw them, and what
	// its browsers saw go wrong.
	a.uiMu.Lock()
	shots := slices.Clone(a.shots)
	a.uiMu.Unlock()
	if env.NoScreenshots {
		shots = nil
	}
	for _, s := range shots {
		name := s.name
		if multi {
			name = s.role + "-" + name
		}
		write(name, reports.ArtifactScreenshot, s.png)
	}
	if p := a.uiProblems(); len(p) > 0 {
		writeJSON("console-problems.json", reports.ArtifactOther, p)
	}
	a.mu.Lock()
	prompts := slices.Clone(a.prompts)
	events := map[string]any{}
	for _, name := range prompts {
		events[name] = a.saved[name]
	}
	steps := slices.Clone(a.records)
	a.mu.Unlock()
	for _, name := range prompts {
		writeJSON("events-"+name+".json", reports.ArtifactEvents, events[name])
	}
	writeJSON("steps.json", reports.ArtifactOther, steps)
	if rc, ok := env.Stub.(Recorder); ok {
		man := r.recording(steps)
		for _, t := range env.Targets {
			if t.StubToken == "" {
				continue
			}
			prefix := ""
			if multi {
				prefix = t.Role + "-"
			}
			doc, _, err := rc.Recording(ctx, t.StubToken)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			write(ScriptFile(prefix), reports.ArtifactOther, doc)
			man.Scripts[t.Role] = ScriptFile(prefix)
		}
		if b, err := yaml.Marshal(man); err == nil {
			write(RecordingFile, reports.ArtifactOther, b)
		} else {
			errs = append(errs, err)
		}
	}
	return arts, errors.Join(errs...)
}
