package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/reports"
	"github.com/spf13/cobra"
)

// replayFlags are agentlab replay's flags.
type replayFlags struct {
	repeat    int
	untilFail bool
	save      string
	prebuilt  string
	cacheDir  string
}

const replayLong = `Replay a recorded attempt: turn a live failure into a deterministic test.

A run with model.mode: record in lab.yaml (with the live provider settings: provider,
baseUrl, model, keyEnv) sends every model request through the lab's stub to the live
provider, streams the answers back unchanged, and keeps in every attempt's artifact
folder (out/artifacts/NAME/attempt-N) a model script that reproduces them
(model-script.yaml: text and thinking chunks, tool calls with their names and
arguments, stop reasons, provider failures) and recording.yaml (the scenario file,
the steps that ran, the consent cards and the answers taken). The key never reaches
them; the run's leak scan checks it.

agentlab replay ARTIFACT_DIR reruns that attempt's scenario on one device with the
recorded script served by the stub, so the model answers the same every time, and
compares each attempt with the recording: the verdict and the prompts' events (text,
thoughts, tool calls with arguments and results, the stream's update kinds; ids and
times aside). --repeat N replays N times (every attempt kept); --until-fail stops at
the first failing attempt, which for a recorded pass is the first that does not
reproduce it — run it against each commit to bisect.
Run it from the folder the recording ran in (the scenario file is named relative to
it); lab.yaml's devices and build apply, its model does not.

--save scenarios/AREA/NAME.yaml writes the replay as a scenario file of the suite
instead of running it: the recorded scenario with the recorded script inline under
model.script, named AREA/NAME, validated. Add it to the suite as a regression test.

Exit codes: 0 every attempt reproduced the recording, 1 one did not (or a product
failure where the recording passed), 2 usage or configuration error, 4 lab faults.`

func newReplayCmd(a *app) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay ARTIFACT_DIR",
		Short: "Rerun a recorded live attempt with its recorded model answers, or save it as a scenario",
		Long:  replayLong,
		Example: `  agentlab replay out/artifacts/notes_revoke/attempt-1
  agentlab replay --repeat 20 --until-fail out/artifacts/notes_revoke/attempt-1
  agentlab replay --save scenarios/notes/revoke-live-1.yaml out/artifacts/notes_revoke/attempt-1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef(cmd, "want one ARTIFACT_DIR (an attempt folder of a record run), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return replay(cmd, a, &f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.repeat, "repeat", 1, "replay N times on one device, keeping every attempt")
	fl.BoolVar(&f.untilFail, "until-fail", false, "stop at the first failing attempt (at most --repeat, default 100)")
	fl.StringVar(&f.save, "save", "", "write the replay as a scenario file (scenarios/AREA/NAME.yaml) instead of running it")
	fl.StringVar(&f.prebuilt, "prebuilt", "", "use the prebuilt artifacts in this folder (agentlab build --out DIR) instead of building")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "build cache (default $XDG_CACHE_HOME/agentlab/build)")
	return cmd
}

// savedName is the scenario name of a file saved at path: its path below
// the scenarios folder, without the extension.
func savedName(path string) (string, error) {
	p := filepath.ToSlash(filepath.Clean(path))
	stem := strings.TrimSuffix(p, filepath.Ext(p))
	if filepath.Ext(p) != ".yaml" {
		return "", fmt.Errorf("--save wants a .yaml file, got %q", path)
	}
	parts := strings.Split(stem, "/")
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] == "scenarios" {
			return strings.Join(parts[i+1:], "/"), nil
		}
	}
	if len(parts) >= 2 {
		return strings.Join(parts[len(parts)-2:], "/"), nil
	}
	return "", fmt.Errorf("--save wants AREA/NAME.yaml (the area is the folder), got %q", path)
}

func replay(cmd *cobra.Command, a *app, f *replayFlags, dir string) error {
	if f.repeat < 1 {
		return usagef(cmd, "--repeat must be at least 1")
	}
	if f.save != "" {
		name, err := savedName(f.save)
		if err != nil {
			return usagef(cmd, "%v", err)
		}
		doc, _, err := lab.ReplayScenario(dir, name)
		if err != nil {
			return exitWith(lab.ExitCode(nil, err), err)
		}
		if err := os.MkdirAll(filepath.Dir(f.save), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.save, doc, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "wrote %s (scenario %s)\n", f.save, name)
		return nil
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	o := a.labOptions()
	o.Build = lab.BuildOptions{Prebuilt: f.prebuilt, CacheDir: f.cacheDir}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	ro := &lab.ReplayOptions{Repeat: f.repeat, UntilFail: f.untilFail}
	if f.untilFail && !cmd.Flags().Changed("repeat") {
		ro.Repeat = 0 // until it fails, within run's own bound
	}
	run, attempts, err := lab.Replay(ctx, cfg, dir, ro, o)
	if run == nil {
		return exitWith(lab.ExitCode(nil, err), err)
	}
	if a.asJSON {
		if perr := writeJSON(a, map[string]any{"runId": run.RunID, "output": cfg.Output, "attempts": attempts}); perr != nil {
			return perr
		}
	} else {
		for _, at := range attempts {
			state := "reproduced"
			if !at.Reproduced {
				state = "DIFFERS: " + strings.Join(at.Diffs, "; ")
			}
			fmt.Fprintf(a.stdout, "attempt %d: %s, %s\n", at.Number, at.Verdict, state)
		}
	}
	same := 0
	for _, at := range attempts {
		if at.Reproduced {
			same++
		}
	}
	if !a.asJSON {
		fmt.Fprintf(a.stdout, "%d of %s reproduced the recording\n", same, plural(len(attempts), "replay"))
	}
	if err != nil {
		return exitWith(lab.ExitCode(run, err), err)
	}
	if same != len(attempts) || len(attempts) == 0 {
		return exitWith(reports.ExitFailures, fmt.Errorf("%d of %s did not reproduce the recording", len(attempts)-same, plural(len(attempts), "replay")))
	}
	return nil
}
