// Package runtimectl is the lab's client for the AgentOS runtime on a
// device: typed Go calls over `agentosd ctl --json …`, run as root through
// the device's root method (devices.Device.Su).
//
// Every call takes one path: the module's agentosd binary on the device
// runs the ctl verb and prints the raw JSON result, which this package
// decodes. On adb devices the binary keeps running between calls
// (`agentosd ctl --lines` on a root stream, a few per client), so a call
// costs a round trip, not a process; elsewhere, or with an agentosd
// without --lines, each call runs its own `agentosd ctl`. Both give the
// same answers. Close the client to end its sessions. A runtime refusal comes back as *errcode.Error (match with
// errors.Is(err, errcode.NotFound) …); a runtime that does not answer is
// ErrUnreachable; a device without the module is ErrNotInstalled.
//
// Secrets (the model key) never appear on a command line and are never
// logged: on a session they travel in the request to ctl's stdin; one-shot,
// they are pushed over adb's sync protocol into a file only root and the
// shell user can read, fed to ctl's stdin by the root shell, and removed in
// the same command.
//
// Verbs the runtime has and this package has no typed call for yet are
// reachable with Client.Call(ctx, &out, "group", "verb", args…).
package runtimectl

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/module"
)

// ModuleDir is where Magisk and KernelSU keep the active module.
const ModuleDir = "/data/adb/modules/" + module.ID

// DefaultAgentosd is the module's agentosd binary on the device.
const DefaultAgentosd = ModuleDir + "/bin/agentosd"

// DefaultTempDir is where secrets are handed over: the adb shell can
// write it, apps cannot list it, and the file is 0600.
const DefaultTempDir = "/data/local/tmp"

// Errors; match with errors.Is.
var (
	// ErrUnreachable: no runtime answers on the admin socket (agentosd is
	// not running, or runs with another socket prefix).
	ErrUnreachable = errors.New("runtime not reachable on the device")
	// ErrNotInstalled: the agentosd binary is not on the device (the
	// module is not installed, or not active yet).
	ErrNotInstalled = errors.New("agentosd not installed on the device")
)

// CtlError is a ctl run that failed without a runtime refusal: a usage
// error (the runtime does not know the verb or its arguments: an older
// runtime), or a failure ctl reported only as text.
type CtlError struct {
	// Verb is the ctl command without arguments ("model set").
	Verb     string
	ExitCode int
	// Stderr is ctl's message (secrets never reach ctl's command line,
	// so it holds none).
	Stderr string
}

func (e *CtlError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = "no message"
	}
	return fmt.Sprintf("agentosd ctl %s: exit %d: %s", e.Verb, e.ExitCode, msg)
}

// Options configure a Client. The zero value works.
type Options struct {
	// Agentosd is the binary's path on the device; default
	// DefaultAgentosd.
	Agentosd string
	// SocketPrefix is the runtime's socket-name prefix, when it was
	// started with one.
	SocketPrefix string
	// TempDir is where secrets are handed over; default DefaultTempDir.
	TempDir string
	// Logger gets one debug line per call (the verb, its duration and
	// exit code; never arguments, results or secrets). Nil discards.
	Logger *slog.Logger
	// OneShot runs every call as its own `agentosd ctl` process, as a
	// person at `adb shell` would, instead of on a kept session.
	OneShot bool
}

// Client calls one device's runtime. It is safe for concurrent use.
type Client struct {
	dev   devices.Device
	opts  Options
	log   *slog.Logger
	lines sessions
}

// New returns a client for dev's runtime.
func New(dev devices.Device, opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Agentosd == "" {
		o.Agentosd = DefaultAgentosd
	}
	if o.TempDir == "" {
		o.TempDir = DefaultTempDir
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{dev: dev, opts: o, log: log}
	if rs, ok := dev.(rootStreamer); ok && !o.OneShot {
		c.lines = sessions{dev: rs, cmd: quote(o.Agentosd) + " ctl --lines 2>/dev/null"}
	}
	return c
}

// Close ends the client's ctl sessions; later calls run one-shot.
func (c *Client) Close() error {
	c.lines.disable()
	return nil
}

// Device is the client's device.
func (c *Client) Device() devices.Device { return c.dev }

// quote quotes s for sh as one word.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ctlArgs are ctl's arguments for a call with args.
func (c *Client) ctlArgs(args []string) []string {
	full := []string{"--json"}
	if c.opts.SocketPrefix != "" {
		full = append(full, "--socket-prefix", c.opts.SocketPrefix)
	}
	return append(full, args...)
}

// command is the shell command running ctl with args.
func (c *Client) command(args []string) string {
	var b strings.Builder
	b.WriteString(quote(c.opts.Agentosd))
	b.WriteString(" ctl --json")
	if c.opts.SocketPrefix != "" {
		b.WriteString(" --socket-prefix ")
		b.WriteString(quote(c.opts.SocketPrefix))
	}
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(quote(a))
	}
	return b.String()
}

// verbName is the ctl command for messages: the leading words of args.
func verbName(args []string) string {
	var words []string
	for _, a := range args {
		if a == "--" || strings.HasPrefix(a, "-") || len(words) == 2 {
			break
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

// Call runs `agentosd ctl --json ARGS…` as root and decodes the result
// into out (nil discards it). ARGS never hold secrets.
func (c *Client) Call(ctx context.Context, out any, args ...string) error {
	verb := verbName(args)
	if done, err := c.onSession(ctx, args, nil, verb, out); done {
		return err
	}
	return c.run(ctx, c.command(args), verb, out)
}

// onSession runs the call on a kept session; done is false when it must
// run one-shot instead (no session answered, so nothing ran).
func (c *Client) onSession(ctx context.Context, args []string, stdin []byte, verb string, out any) (done bool, err error) {
	start := time.Now()
	res, ok, err := c.lines.call(ctx, c.ctlArgs(args), stdin)
	if !ok {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("agentosd ctl %s: %w", verb, err)
	}
	c.log.Debug("agentosd ctl", "verb", verb, "exit", res.ExitCode, "duration", time.Since(start), "session", true)
	return true, decode(verb, res, out)
}

// callWithSecret runs ctl with secret on its stdin (see the package doc).
func (c *Client) callWithSecret(ctx context.Context, secret []byte, out any, args ...string) error {
	verb := verbName(args)
	if done, err := c.onSession(ctx, args, secret, verb, out); done {
		return err
	}
	var nb [12]byte
	rand.Read(nb[:])
	file := c.opts.TempDir + "/.agentlab-secret-" + hex.EncodeToString(nb[:])
	if err := c.dev.Push(ctx, bytes.NewReader(secret), file, fs.FileMode(0o600)); err != nil {
		return fmt.Errorf("agentosd ctl %s: hand over the secret: %w", verb, err)
	}
	cmd := c.command(args) + " < " + quote(file) + "; rc=$?; rm -f " + quote(file) + "; exit $rc"
	err := c.run(ctx, cmd, verb, out)
	if err != nil {
		// The command removes the file; make sure when it never ran.
		c.dev.Su(context.WithoutCancel(ctx), "rm -f "+quote(file))
	}
	return err
}

// run runs a ctl command line as root and interprets its outcome.
func (c *Client) run(ctx context.Context, cmd, verb string, out any) error {
	start := time.Now()
	res, err := c.dev.Su(ctx, cmd)
	if err != nil {
		return fmt.Errorf("agentosd ctl %s: %w", verb, err)
	}
	c.log.Debug("agentosd ctl", "verb", verb, "exit", res.ExitCode, "duration", time.Since(start))
	return decode(verb, res, out)
}

// decode interprets ctl's outcome. With --json, ctl prints the result or
// {"error": …} on stdout; `app run` exits with the app's own code, so a
// JSON result wins over the exit code.
func decode(verb string, res devices.Result, out any) error {
	stdout := bytes.TrimSpace(res.Stdout)
	if len(stdout) > 0 && json.Valid(stdout) {
		var probe struct {
			Error *errcode.WireError `json:"error"`
		}
		if stdout[0] == '{' && json.Unmarshal(stdout, &probe) == nil && probe.Error != nil && probe.Error.Data.AgentosCode != "" {
			return admin.FromWire(*probe.Error)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(stdout, out); err != nil {
			return fmt.Errorf("agentosd ctl %s: decode result: %w", verb, err)
		}
		return nil
	}
	stderr := string(res.Stderr)
	if stderr == "" && res.ExitCode != 0 {
		// Devices without shell_v2 merge stderr into stdout.
		stderr = string(res.Stdout)
	}
	switch res.ExitCode {
	case admin.ExitOK:
		if out == nil {
			return nil
		}
		return fmt.Errorf("agentosd ctl %s: no JSON result", verb)
	case admin.ExitUnreachable:
		return fmt.Errorf("agentosd ctl %s: %w", verb, ErrUnreachable)
	case 126, 127:
		return fmt.Errorf("agentosd ctl %s: %w (%s)", verb, ErrNotInstalled, firstLine(stderr))
	}
	return &CtlError{Verb: verb, ExitCode: res.ExitCode, Stderr: firstLine(stderr)}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}
