package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/spf13/cobra"
)

func init() { register(newBuildCmd) }

// buildFlags are build's flags, shared with provision.
type buildFlags struct {
	abis     []string
	apps     []string
	cacheDir string
}

// buildOptions are the build options for cfg, flags and the global --out.
func (a *app) buildOptions(cfg *config.Config, f *buildFlags, outDir string) *build.Options {
	o := &build.Options{
		OutDir:     outDir,
		CacheDir:   f.cacheDir,
		ABIs:       f.abis,
		Version:    buildVersion(),
		SigningKey: cfg.SigningKeyPath(),
		Apps:       f.apps,
		Progress:   a.stderr,
		Logger:     a.logger(),
	}
	if len(o.ABIs) == 0 {
		o.ABIs = cfg.Build.ABIs
	}
	o.Tags = cfg.Build.Tags
	// Virtual devices get the runtime whose clock the lab advances.
	o.Virtual = !cfg.Build.ReleaseOnVirtual
	if len(o.Apps) == 0 {
		o.Apps = cfg.Provision.Apps
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join(cfg.Output, "build")
	}
	return o
}

// buildVersion is Version() in the form module.prop accepts.
func buildVersion() string {
	v := Version()
	var b strings.Builder
	for _, r := range v {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > 32 {
		s = s[:32]
	}
	return s
}

func newBuildCmd(a *app) *cobra.Command {
	f := &buildFlags{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build agentosd, the module zip and the signed app bundles per ABI",
		Long: `Cross-compile agentosd and every sample app (sampleapps/<app>/cmd/<app>) for each
device ABI as static Linux binaries (x86_64: GOARCH amd64, arm64-v8a: arm64;
CGO_ENABLED=0, -trimpath, the version stamped in), pack the Magisk/KernelSU module
zip per ABI and one signed .agentapp bundle per app holding every ABI.

Virtual devices get agentosd built once more with the agentos_labclock tag, in
modules of their own (under <out>/virtual): a runtime whose clock the lab advances
(agentosd ctl clock advance) instead of waiting out its timers. Phones and emulators
get the release runtime. lab.yaml build.releaseOnVirtual: true gives virtual devices
the release runtime too.

Bundles are signed with the lab's signing key (lab.yaml build.signingKey, default
<stateDir>/signing.key, created with mode 0600 on first use and never printed).

Everything is cached by content: a second build with no source change compiles and
packs nothing. Artifacts go to --out (default <output>/build) with artifacts.json
listing them; progress goes to stderr. Run it from the source tree.`,
		Example: `  agentlab build
  agentlab build --abi x86_64,arm64-v8a --out dist
  agentlab build --apps notes,sms --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			arts, err := build.Build(cmd.Context(), a.buildOptions(cfg, f, a.outDir))
			if err != nil {
				return err
			}
			if a.asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(arts)
			}
			return printArtifacts(a, arts)
		},
	}
	f.addFlags(cmd)
	return cmd
}

func (f *buildFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.abis, "abi", nil, "ABIs to build: x86_64, arm64-v8a (default lab.yaml build.abis, else this host's)")
	cmd.Flags().StringSliceVar(&f.apps, "apps", nil, "apps to build (default lab.yaml provision.apps, else all)")
	cmd.Flags().StringVar(&f.cacheDir, "cache-dir", "", "build cache (default $XDG_CACHE_HOME/agentlab/build)")
}

func printArtifacts(a *app, arts *build.Artifacts) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "version %s, signer %s…\n", arts.Version, arts.SigningDigest[:12])
	for _, abi := range arts.ABIs {
		fmt.Fprintf(tw, "%s\tagentosd\t%s\n", abi, arts.Agentosd[abi])
		fmt.Fprintf(tw, "%s\tmodule (versionCode %d)\t%s\n", abi, arts.ModuleVersionCode, arts.Modules[abi])
	}
	if v := arts.Virtual; v != nil {
		for _, abi := range v.ABIs {
			fmt.Fprintf(tw, "%s\tagentosd for virtual devices (%s)\t%s\n", abi, strings.Join(v.Tags, ","), v.Agentosd[abi])
			fmt.Fprintf(tw, "%s\tmodule for virtual devices (versionCode %d)\t%s\n", abi, v.ModuleVersionCode, v.Modules[abi])
		}
	}
	for _, b := range arts.Bundles {
		fmt.Fprintf(tw, "bundle\t%s (%s, versionCode %d)\t%s\n", b.App, b.Package, b.VersionCode, b.Path)
	}
	return tw.Flush()
}
