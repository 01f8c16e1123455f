package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is stamped at build time:
//
//	go build -ldflags "-X github.com/agentoslab/agentlab/lab/cli.version=1.2.3" ./lab/cmd/agentlab
var version = ""

// Version is agentlab's version: the stamped one, else the VCS revision
// Go recorded in the binary, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			return "dev-" + rev + dirty
		}
	}
	return "dev"
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print agentlab's version",
		Long: `Print agentlab's version, the Go version it was built with and the platform.
The same version is stamped into the agentosd binaries and bundles that
agentlab build produces.`,
		Example: "  agentlab version\n  agentlab version --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := struct {
				Version string `json:"version"`
				Go      string `json:"go"`
				OS      string `json:"os"`
				Arch    string `json:"arch"`
			}{Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH}
			if a.asJSON {
				return json.NewEncoder(a.stdout).Encode(v)
			}
			_, err := fmt.Fprintf(a.stdout, "agentlab %s (%s, %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
			return err
		},
	}
}
