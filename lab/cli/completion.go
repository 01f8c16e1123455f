package cli

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/spf13/cobra"
)

func newCompletionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: `Print a completion script for bash, zsh or fish. It completes commands and flags,
and the values that depend on the lab: scenario names for --scenario, the suite's
tags for --tags and --exclude-tags, device serials (adb servers and virtual
devices) for -s/--serial, results.json files for report diff and merge. Values
are read from the configuration at completion time (--config on the command line
being completed, else ./lab.yaml, else the built-in default).

  bash:  source <(agentlab completion bash)      # or save it under
         /etc/bash_completion.d/agentlab (needs the bash-completion package)
  zsh:   agentlab completion zsh > "${fpath[1]}/_agentlab"   # then compinit
  fish:  agentlab completion fish > ~/.config/fish/completions/agentlab.fish`,
		Example: `  source <(agentlab completion bash)
  agentlab completion zsh > "${fpath[1]}/_agentlab"
  agentlab completion fish > ~/.config/fish/completions/agentlab.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(a.stdout, true)
			case "zsh":
				return root.GenZshCompletion(a.stdout)
			case "fish":
				return root.GenFishCompletion(a.stdout, true)
			}
			return usagef(cmd, "completion %q: want bash, zsh or fish", args[0])
		},
	}
}

// completionSuite is the suite lab.yaml names, read for completion: what
// does not load completes nothing rather than failing the shell.
func completionSuite(a *app) []*scenario.Scenario {
	cfg, err := a.config()
	if err != nil {
		return nil
	}
	suite, _ := scenario.LoadAll(cfg.Scenarios)
	return suite
}

// completeSelection completes run's --scenario with scenario names (and
// each area's glob) and --tags/--exclude-tags with the suite's tags.
func completeSelection(cmd *cobra.Command, a *app) {
	cmd.RegisterFlagCompletionFunc("scenario", func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, s := range completionSuite(a) {
			names = append(names, s.Name)
			if area, _, ok := strings.Cut(s.Name, "/"); ok && !slices.Contains(names, area+"/*") {
				names = append(names, area+"/*")
			}
		}
		return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	completeTags(cmd, a, "tags", "exclude-tags")
}

// completeTags completes the named flags with the suite's tags. The flags
// take comma-separated lists: what precedes the last comma is kept.
func completeTags(cmd *cobra.Command, a *app, flags ...string) {
	for _, name := range flags {
		cmd.RegisterFlagCompletionFunc(name, func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var tags []string
			for _, s := range completionSuite(a) {
				for _, t := range s.Tags {
					if !slices.Contains(tags, t) {
						tags = append(tags, t)
					}
				}
			}
			prefix, last := "", toComplete
			if i := strings.LastIndex(toComplete, ","); i >= 0 {
				prefix, last = toComplete[:i+1], toComplete[i+1:]
			}
			var out []string
			for _, t := range matching(tags, last) {
				out = append(out, prefix+t)
			}
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		})
	}
}

// completeSerials completes the named flag with the serials of the
// configured adb servers' devices and the virtual devices' names and
// serials, without starting anything.
func completeSerials(cmd *cobra.Command, a *app, flag string) {
	cmd.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return matching(knownSerials(cmd.Context(), a), toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// knownSerials are the serials completion offers, each asked quickly.
func knownSerials(ctx context.Context, a *app) []string {
	cfg, err := a.config()
	if err != nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var out []string
	for _, src := range cfg.Devices.ADB {
		entries, err := adb.NewServer(src.Server, nil).Devices(ctx)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if src.Admits(e.Serial) {
				out = append(out, e.Serial)
			}
		}
	}
	if infos, err := virtual.List(cfg.VirtualStateDir()); err == nil {
		for _, in := range infos {
			out = append(out, in.Name)
			if in.Serial != "" && in.State == "running" {
				out = append(out, in.Serial)
			}
		}
	}
	return out
}

// completeFiles completes arguments with files of this extension.
func completeFiles(ext string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return []string{ext}, cobra.ShellCompDirectiveFilterFileExt
	}
}

// matching are the candidates that start with prefix, sorted, once each.
func matching(candidates []string, prefix string) []string {
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}
