package cli

import (
	"fmt"
	"strings"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/build"
	"github.com/spf13/cobra"
)

// buildFlags are build's flags, shared with provision.
type buildFlags struct {
	abis     []string
	apps     []string
	cacheDir string
	prebuilt string
}

func (f *buildFlags) options() lab.BuildOptions {
	return lab.BuildOptions{Prebuilt: f.prebuilt, ABIs: f.abis, Apps: f.apps, CacheDir: f.cacheDir}
}

// buildVersion is Version() in the form module.prop accepts.
func buildVersion() string { return lab.BuildVersion(Version()) }

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
packs nothing. Artifacts go to --out (default the build cache's out folder, never
the working directory) with artifacts.json listing them; progress goes to stderr.
Run it from the source tree.

The folder it writes is what a released agentlab runs with outside the source tree:
"agentlab build --abi x86_64,arm64-v8a --out DIST" then agentlab beside it in DIST
(or "agentlab run --prebuilt DIST").`,
		Example: `  agentlab build
  agentlab build --abi x86_64,arm64-v8a --out dist
  agentlab build --apps notes,sms --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			o := a.labOptions()
			o.Build = f.options()
			o.Build.OutDir = a.outDir
			arts, err := lab.Build(cmd.Context(), cfg, nil, o)
			if err != nil {
				return err
			}
			if a.asJSON {
				return writeJSON(a, arts)
			}
			return printArtifacts(a, arts)
		},
	}
	f.addFlags(cmd, false)
	return cmd
}

func (f *buildFlags) addFlags(cmd *cobra.Command, prebuilt bool) {
	cmd.Flags().StringSliceVar(&f.abis, "abi", nil, "ABIs to build: x86_64, arm64-v8a (default lab.yaml build.abis, else the devices', else this host's)")
	cmd.Flags().StringSliceVar(&f.apps, "apps", nil, "apps to build (default lab.yaml provision.apps, else all)")
	cmd.Flags().StringVar(&f.cacheDir, "cache-dir", "", "build cache (default $XDG_CACHE_HOME/agentlab/build)")
	if prebuilt {
		cmd.Flags().StringVar(&f.prebuilt, "prebuilt", "", "use the prebuilt artifacts in this folder (agentlab build --out DIR) instead of building")
	}
}

func printArtifacts(a *app, arts *build.Artifacts) error {
	fmt.Fprintf(a.stdout, "version %s, signer %s…\n", arts.Version, arts.SigningDigest[:min(12, len(arts.SigningDigest))])
	var rows [][]string
	for _, abi := range arts.ABIs {
		rows = append(rows, []string{abi, "agentosd", arts.Agentosd[abi]})
		rows = append(rows, []string{abi, fmt.Sprintf("module (versionCode %d)", arts.ModuleVersionCode), arts.Modules[abi]})
	}
	if v := arts.Virtual; v != nil {
		for _, abi := range v.ABIs {
			rows = append(rows, []string{abi, fmt.Sprintf("agentosd for virtual devices (%s)", strings.Join(v.Tags, ",")), v.Agentosd[abi]})
			rows = append(rows, []string{abi, fmt.Sprintf("module for virtual devices (versionCode %d)", v.ModuleVersionCode), v.Modules[abi]})
		}
	}
	for _, b := range arts.Bundles {
		rows = append(rows, []string{"bundle", fmt.Sprintf("%s (%s, versionCode %d)", b.App, b.Package, b.VersionCode), b.Path})
	}
	return printTable(a, []string{"abi", "artifact", "path"}, rows)
}
