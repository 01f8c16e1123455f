package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/reports"
	"github.com/spf13/cobra"
)

// minGo is the oldest Go that builds the project.
const minGo = "1.26"

// check is one doctor finding.
type check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Required is true when the configured run cannot happen without it.
	Required bool `json:"required"`
	// Found says what was found, or what is missing.
	Found string `json:"found"`
	// Needed says what needs it.
	Needed string `json:"neededFor"`
	// Fix is the one command that fixes it.
	Fix string `json:"fix,omitempty"`
}

// doctorEnv is the machine as the doctor sees it; tests replace parts.
type doctorEnv struct {
	lookPath func(string) (string, error)
	// output runs a command (bounded) and returns its combined output.
	output     func(ctx context.Context, name string, args ...string) (string, error)
	euid       func() int
	getenv     func(string) string
	lookupEnv  func(string) (string, bool)
	stat       func(string) error
	namespaces func() error
}

func hostDoctorEnv() doctorEnv {
	return doctorEnv{
		lookPath: exec.LookPath,
		output: func(ctx context.Context, name string, args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
			return string(b), err
		},
		euid:       os.Geteuid,
		getenv:     os.Getenv,
		lookupEnv:  os.LookupEnv,
		stat:       func(p string) error { _, err := os.Stat(p); return err },
		namespaces: probeNamespaces,
	}
}

// probeNamespaces starts a trivial child in fresh mount, pid, net, uts
// and ipc namespaces, which is what a virtual device needs.
func probeNamespaces() error {
	bin, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("no 'true' binary to probe with: %w", err)
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
	}
	return cmd.Run()
}

var goVersionRE = regexp.MustCompile(`go(\d+)\.(\d+)`)

// versionAtLeast compares "1.26.8"-style versions by major and minor.
func versionAtLeast(have, want string) bool {
	parse := func(s string) (int, int) {
		parts := strings.SplitN(s, ".", 3)
		maj, _ := strconv.Atoi(parts[0])
		mnr := 0
		if len(parts) > 1 {
			mnr, _ = strconv.Atoi(parts[1])
		}
		return maj, mnr
	}
	hm, hn := parse(have)
	wm, wn := parse(want)
	return hm > wm || hm == wm && hn >= wn
}

// diagnose runs every check for the run cfg describes.
func diagnose(ctx context.Context, env doctorEnv, cfg *config.Config) []check {
	virtualDevices := cfg.Devices.Virtual != nil && cfg.Devices.Virtual.Count > 0
	var avds, containers bool
	for _, e := range cfg.Devices.Emulators {
		avds = avds || e.AVD != nil
		containers = containers || e.Container != nil
	}
	var out []check

	// Go builds agentosd and the apps for every run.
	c := check{Name: "go", Required: true, Needed: "agentlab build (the runtime and apps are compiled per device ABI)",
		Fix: fmt.Sprintf("curl -fsSL https://go.dev/dl/go%s.8.linux-%s.tar.gz | tar -C /usr/local -xz && export PATH=$PATH:/usr/local/go/bin", minGo, runtime.GOARCH)}
	if _, err := env.lookPath("go"); err != nil {
		c.Found = "go not found on PATH"
	} else if v, err := env.output(ctx, "go", "env", "GOVERSION"); err != nil {
		c.Found = "go env GOVERSION failed: " + firstLine(v)
	} else if m := goVersionRE.FindStringSubmatch(v); m == nil {
		c.Found = "unrecognised Go version " + firstLine(v)
	} else if have := m[1] + "." + m[2]; !versionAtLeast(have, minGo) {
		c.Found = fmt.Sprintf("go%s is older than go%s", have, minGo)
	} else {
		c.OK, c.Found = true, strings.TrimSpace(v)
	}
	out = append(out, c)

	// adb talks to every device, virtual ones included.
	c = check{Name: "adb", Required: true, Needed: "every device (the lab drives devices through an adb server)", Fix: "apt-get install -y adb"}
	if _, err := env.lookPath("adb"); err != nil {
		c.Found = "adb not found on PATH"
	} else if v, err := env.output(ctx, "adb", "version"); err != nil {
		c.Found = "adb version failed: " + firstLine(v)
	} else {
		c.OK, c.Found = true, firstLine(v)
	}
	out = append(out, c)

	c = check{Name: "root", Required: virtualDevices, Needed: "virtual devices (Linux namespaces and real app uids)", Fix: "sudo -E agentlab " + "<command>"}
	if uid := env.euid(); uid == 0 {
		c.OK, c.Found = true, "running as root"
	} else {
		c.Found = fmt.Sprintf("running as uid %d", uid)
	}
	out = append(out, c)

	c = check{Name: "namespaces", Required: virtualDevices, Needed: "virtual devices (mount, pid, net, uts and ipc namespaces)",
		Fix: "run agentlab as root on the host, or in a container started with docker run --privileged"}
	if err := env.namespaces(); err != nil {
		c.Found = "cannot create namespaces: " + err.Error()
	} else {
		c.OK, c.Found = true, "mount, pid, net, uts, ipc"
	}
	out = append(out, c)

	c = check{Name: "busybox", Needed: "module scripts run under BusyBox ash inside virtual devices, as on a phone (else the host's sh)",
		Fix: "apt-get install -y busybox-static"}
	if err := env.stat("/bin/busybox"); err != nil {
		c.Found = "/bin/busybox not found"
	} else {
		c.OK, c.Found = true, "/bin/busybox"
	}
	out = append(out, c)

	c = check{Name: "docker", Required: containers, Needed: "emulators in containers (devices.emulators[].container)", Fix: "apt-get install -y docker.io && systemctl start docker"}
	if _, err := env.lookPath("docker"); err != nil {
		c.Found = "docker not found on PATH"
	} else if v, err := env.output(ctx, "docker", "version", "--format", "{{.Server.Version}}"); err != nil {
		c.Found = "docker engine not reachable: " + firstLine(v)
	} else {
		c.OK, c.Found = true, "engine "+firstLine(v)
	}
	out = append(out, c)

	c = check{Name: "android-sdk", Required: avds, Needed: "AVD emulators (devices.emulators[].avd)",
		Fix: `apt-get install -y sdkmanager && sdkmanager "emulator" "cmdline-tools;latest" "platform-tools"`}
	sdk := env.getenv("ANDROID_HOME")
	if sdk == "" {
		sdk = env.getenv("ANDROID_SDK_ROOT")
	}
	var missing []string
	for _, tool := range []struct{ name, rel string }{{"emulator", "emulator/emulator"}, {"avdmanager", "cmdline-tools/latest/bin/avdmanager"}} {
		if _, err := env.lookPath(tool.name); err == nil {
			continue
		}
		if sdk != "" && env.stat(filepath.Join(sdk, tool.rel)) == nil {
			continue
		}
		missing = append(missing, tool.name)
	}
	if len(missing) > 0 {
		c.Found = strings.Join(missing, " and ") + " not found (PATH, $ANDROID_HOME)"
	} else {
		c.OK, c.Found = true, "emulator, avdmanager"
	}
	out = append(out, c)

	c = check{Name: "node", Needed: "optional: editor integrations that launch ACP agents through npm packages", Fix: "apt-get install -y nodejs npm"}
	if _, err := env.lookPath("node"); err != nil {
		c.Found = "node not found on PATH"
	} else if v, err := env.output(ctx, "node", "--version"); err != nil {
		c.Found = "node --version failed"
	} else if !versionAtLeast(strings.TrimPrefix(firstLine(v), "v"), "20") {
		c.Found = firstLine(v) + " is older than v20"
	} else {
		c.OK, c.Found = true, firstLine(v)
	}
	out = append(out, c)

	c = check{Name: "chromium", Needed: "optional: the ui consent driver (--consent-driver ui, consent_driver: ui) and the console's browser tests",
		Fix: "apt-get install -y chromium"}
	if p, err := env.lookPath("chromium"); err != nil {
		c.Found = "chromium not found on PATH"
	} else if v, err := env.output(ctx, p, "--version"); err == nil && strings.Contains(v, "Chromium") {
		// Debian's wrapper script may print noise before the version.
		line := v[strings.Index(v, "Chromium"):]
		c.OK, c.Found = true, firstLine(line)
	} else {
		c.OK, c.Found = true, p
	}
	out = append(out, c)

	if cfg.Model.Live() {
		c = check{Name: "model-key", Required: true, Needed: "the live model (" + cfg.Model.Provider + ")",
			Fix: "export " + cfg.Model.KeyEnv + "=<your key>   # never put the key in lab.yaml"}
		if _, err := cfg.Model.Key(env.lookupEnv); err != nil {
			c.Found = "$" + cfg.Model.KeyEnv + " is not set"
		} else {
			c.OK, c.Found = true, "$"+cfg.Model.KeyEnv+" is set"
		}
		out = append(out, c)
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// printChecks writes the doctor's table; subject is what the checks are
// for ("the run in lab.yaml", "AgentOS on R5CT30").
func printChecks(w io.Writer, checks []check, subject string) {
	rows := make([][]string, len(checks))
	for i, c := range checks {
		status := "ok"
		switch {
		case !c.OK && c.Required:
			status = "MISSING"
		case !c.OK:
			status = "optional"
		}
		rows[i] = []string{c.Name, status, c.Found}
	}
	reports.WriteTable(w, []string{"check", "status", "found"}, rows)
	var fixes []check
	for _, c := range checks {
		if !c.OK {
			fixes = append(fixes, c)
		}
	}
	if len(fixes) == 0 {
		fmt.Fprintf(w, "\nEverything %s needs is here.\n", subject)
		return
	}
	fmt.Fprintf(w, "\nTo fix (for %s):\n", subject)
	for _, c := range fixes {
		kind := "optional"
		if c.Required {
			kind = "required"
		}
		fmt.Fprintf(w, "  %s (%s; %s):\n    %s\n", c.Name, kind, c.Needed, c.Fix)
	}
}

func newDoctorCmd(a *app) *cobra.Command {
	var serial, probeURL string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine for what the lab needs, with the command that fixes each gap",
		Long: `Check this machine for what the configured run needs: Go (to build the runtime and
apps), adb, root and Linux namespaces (virtual devices), BusyBox, Docker (container
emulators), the Android SDK tools (AVD emulators), node, chromium (the ui consent
driver), and the live model's key
when lab.yaml asks for a live model.

For everything missing, doctor prints the one command that fixes it. What is
required depends on lab.yaml: root and namespaces only when it starts virtual
devices, Docker only for container emulators, the SDK only for AVDs.

With --device SERIAL it checks one phone, emulator or virtual device instead: the
root manager and its version, SELinux, the API level, free space on /data, the
AgentOS module and its supervisor, and, as the runtime's uid, its network
permission (the inet group), DNS (through netd) and HTTPS (--probe-url; not on a
virtual device, whose network is loopback only), and the time zone it runs in.

Exits 1 when something required is missing, 0 otherwise.`,
		Example: `  agentlab doctor
  agentlab doctor --config nightly.yaml
  agentlab doctor --json | jq '.[] | select(.ok | not)'
  agentlab doctor --device R5CT30XXXXX
  agentlab doctor --device 127.0.0.1:37513 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			var checks []check
			subject := "the run in " + cfg.Source
			if serial != "" {
				dev, done, err := findDevice(cmd.Context(), a, cfg, serial)
				defer done()
				if err != nil {
					return exitWith(ExitFailed, err)
				}
				checks, subject = diagnoseDevice(cmd.Context(), dev, probeURL, publishedNames(cfg, serial)), "AgentOS on "+serial
			} else {
				checks = diagnose(cmd.Context(), a.doctorEnv(), cfg)
			}
			if a.asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(checks); err != nil {
					return err
				}
			} else {
				printChecks(a.stdout, checks, subject)
			}
			var missing []string
			for _, c := range checks {
				if c.Required && !c.OK {
					missing = append(missing, c.Name)
				}
			}
			if len(missing) > 0 {
				return exitWith(ExitFailed, errors.New("missing: "+strings.Join(missing, ", ")))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&serial, "device", "", "check this device (serial, or a virtual device's name) instead of this machine")
	cmd.Flags().StringVar(&probeURL, "probe-url", defaultProbeURL, "with --device: the URL the runtime's uid fetches over HTTPS (a live model's base URL, say)")
	return cmd
}

// doctorEnv is the host's, unless a test set one.
func (a *app) doctorEnv() doctorEnv {
	if a.doctor != nil {
		return *a.doctor
	}
	env := hostDoctorEnv()
	env.lookupEnv = a.lookupEnv
	return env
}
