// Package bridge is `agentlab bridge`: a stdio ACP agent for editors
// (Zed and others) that pairs with a device's AgentOS runtime and
// forwards to it, the Go counterpart of the upstream acp-bridge (spec
// §8.4).
//
// Flow: resolve the target (adb:<serial>, or with --connect tcp:<host>:<port>
// or unix:<path>); a named serial must be one adb lists as ready ("no
// such device: S" otherwise, exit 4); load the state file; a pairing code
// (--code or $AGENTOS_PAIRING_CODE) or a stored token is needed; `adb -s S
// forward tcp:P localabstract:agentos-acp` (removed on exit); connect;
// send the _org.agentos/pair line; read the first answer line. A refusal
// prints its reason and a hint and exits 3 (an invalid stored token is
// forgotten when no code was given). A new token is stored. Diagnostics go
// to stderr, prefixed "agentlab bridge: ".
//
// An editor sees the failures too: when the bridge cannot reach the phone
// or is refused, it waits up to RefuseWait for the editor's first request
// (initialize) and answers it with a JSON-RPC error whose message is the
// reason and what to do (the command to pair, with the device's serial),
// then exits with its code. Without that the editor only saw the agent's
// stdout end.
//
// Code fetches a fresh pairing code over adb as root (the module's
// agentosd ctl, through su or a root adbd; see lab/runtimectl), prints it
// or pairs with it at once, and says exactly why when it cannot.
//
// After pairing, stdout carries only ACP. The bridge is line-aware in
// both directions (newline-delimited JSON-RPC, lines of up to
// MaxLineChars; a longer line is passed through unparsed and the phone
// refuses it as before) and never reorders, drops or merges messages. It
// changes one thing: stdio MCP servers in session/new, session/load,
// session/resume and session/fork are left out before the request goes to
// the phone, and right after the phone's answer the session gets an
// agent_message_chunk saying which servers were left out and why
// (NoticeText, _meta."org.agentos".bridge.droppedMcpServers). Editors
// forward the servers of their own settings, and the phone refused the
// whole session for one stdio entry.
//
// Trust decision: the phone accepts only Streamable HTTP servers on
// public hosts (spec §2.9, §4.8), so nothing on the phone can reach a
// process on this computer. Running the editor's stdio servers here and
// offering their tools to the phone session through the bridge would run
// them with this desktop user's rights on behalf of a phone-side model;
// that needs a client-tool extension of the protocol (tools the client
// serves, with the phone's consent in front of them) and is not done:
// the servers are left out, with the notice.
//
// Exit codes: 0 ok (stdin ended), 1 failure (signal, handshake timeout,
// an answer that is not JSON), 2 usage, 3 auth (not paired, refused), 4 adb
// or device problem, 5 phone not listening (access off, runtime not
// running, connection closed before answering), 6 connection closed by the
// phone.
//
// The state file ({"version":1,"devices":{key:{token, pairingId, label,
// pairedAt}}}) lives in a 0700 folder; it is written to <file>.<pid>.tmp
// with mode 0600 and renamed. Codes and tokens are never logged; Code
// prints a code on stdout only, for the person who asked.
package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit codes.
const (
	ExitOK           = 0
	ExitFailure      = 1
	ExitUsage        = 2
	ExitAuth         = 3
	ExitDevice       = 4
	ExitNotListening = 5
	ExitClosed       = 6
)

// Defaults.
const (
	DefaultTimeout = 10 * time.Second
	// MaxAnswerBytes bounds the handshake answer line.
	MaxAnswerBytes = 65536 * 4
	// Socket is the runtime's desktop socket on the device.
	Socket = "localabstract:agentos-acp"
	// PairMethod is the handshake method.
	PairMethod = "_org.agentos/pair"
	// drainGrace is how long the phone's last answers are waited for
	// after stdin ends.
	drainGrace = 2 * time.Second
)

// Refusal reasons the phone sends (details.reason).
const (
	ReasonPairingRequired = "pairing_required"
	ReasonInvalidCode     = "invalid_code"
	ReasonCodeExpired     = "code_expired"
	ReasonTooManyAttempts = "too_many_attempts"
	ReasonInvalidToken    = "invalid_token"
	ReasonDisabled        = "disabled"
)

// Reasons of the bridge's own refusals (Error.Reason), before the phone
// was asked.
const (
	// ReasonNotPaired: no code was given and no token is stored.
	ReasonNotPaired = "not_paired"
	// ReasonNoDevice: adb has no such device, none, several, or it is
	// not ready.
	ReasonNoDevice = "no_device"
	// ReasonNotListening: nothing answers on the desktop socket.
	ReasonNotListening = "not_listening"
	// ReasonBusy: the phone serves as many desktop connections as it may.
	ReasonBusy = "busy"
)

// hint says what to do about a refusal of reason by t's phone: the
// commands name t (its serial, or --connect), so they can be pasted.
func hint(reason string, t *target) string {
	switch reason {
	case ReasonDisabled:
		return "turn desktop access on: on the phone (Settings → Desktop access), or from here: " + t.command("code --enable --pair")
	case ReasonPairingRequired:
		return "pair first: " + t.command("code --pair") + " (takes a code from the phone over adb as root), or " + t.command("pair <code>") + " with the code the phone shows"
	case ReasonInvalidCode:
		return "check the code the phone shows, or take a new one: " + t.command("code --pair")
	case ReasonCodeExpired:
		return "a code is valid for 5 minutes: take a new one: " + t.command("code --pair")
	case ReasonTooManyAttempts:
		return "that code is void now: take a new one: " + t.command("code --pair")
	case ReasonInvalidToken:
		return "pair again with a new code: " + t.command("code --pair")
	}
	return ""
}

// phoneCode is how to show a pairing code on the phone over adb (the
// module's agentosd is not on the shell's PATH and needs root).
const phoneCode = `adb shell "su -c '/data/adb/modules/agentos/bin/agentosd ctl desktop code'"`

// Error is a bridge failure with its exit code and a hint for people.
type Error struct {
	Code int
	Msg  string
	Hint string
	// Reason is the phone's details.reason for a refused pairing.
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the exit code for err: 0 for nil, the *Error's code, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitFailure
}

func fail(code int, err error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Options configure the bridge. Zero values take the defaults of spec
// §8.4.
type Options struct {
	// Serial is the adb serial; default $ANDROID_SERIAL, else the only
	// device `adb devices` lists.
	Serial string
	// Port is the local TCP port of the adb forward; 0 lets adb choose.
	Port int
	// Code is a pairing code; default $AGENTOS_PAIRING_CODE.
	Code string
	// Connect skips adb: "host:port" (a forwarded port, a remote relay)
	// or "unix:<path>" ("unix:@name" for an abstract socket).
	Connect string
	// StatePath is the state file; default DefaultStatePath.
	StatePath string
	// ADB is the adb binary; default $ADB, $ANDROID_HOME or
	// $ANDROID_SDK_ROOT /platform-tools/adb when present, else "adb".
	ADB string
	// Label names this computer on the phone; default
	// agentlab-bridge@<hostname>.
	Label string
	// Timeout bounds the handshake; default 10 s.
	Timeout time.Duration
	// RefuseWait bounds the wait for the editor's first request when the
	// phone cannot be reached; default RefuseWait.
	RefuseWait time.Duration
	// Quiet drops informational messages (errors are still printed).
	Quiet bool
	// ADBEnv is the environment of adb invocations; nil inherits this
	// process's (ANDROID_ADB_SERVER_PORT picks the adb server).
	ADBEnv []string

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

func (o *Options) normalize() {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Stdin == nil {
		o.Stdin = strings.NewReader("")
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Code == "" {
		o.Code = o.Getenv("AGENTOS_PAIRING_CODE")
	}
	if o.StatePath == "" {
		o.StatePath = DefaultStatePath(o.Getenv)
	}
	if o.Label == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		o.Label = "agentlab-bridge@" + host
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RefuseWait <= 0 {
		o.RefuseWait = RefuseWait
	}
	if o.ADB == "" {
		o.ADB = o.Getenv("ADB")
	}
	if o.ADB == "" {
		for _, env := range []string{"ANDROID_HOME", "ANDROID_SDK_ROOT"} {
			if d := o.Getenv(env); d != "" {
				if p := filepath.Join(d, "platform-tools", "adb"); fileExists(p) {
					o.ADB = p
					break
				}
			}
		}
	}
	if o.ADB == "" {
		o.ADB = "adb"
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (o *Options) info(format string, args ...any) {
	if !o.Quiet {
		fmt.Fprintf(o.Stderr, "agentlab bridge: "+format+"\n", args...)
	}
}

// Report prints err to stderr the bridge's way and returns its exit
// code.
func Report(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(w, "agentlab bridge: %v\n", err)
	var e *Error
	if errors.As(err, &e) && e.Hint != "" {
		fmt.Fprintf(w, "agentlab bridge: hint: %s\n", e.Hint)
	}
	return ExitCode(err)
}

// target is where the runtime's desktop socket is reached.
type target struct {
	key     string
	network string // "tcp" or "unix"
	addr    string
	serial  string // adb only
	// ready: adb listed serial as ready when it was picked.
	ready bool
}

// command is the agentlab command line running the bridge subcommand sub
// ("code --pair", "pair <code>") for t. A --connect target has no adb to
// take a code with, so "code" becomes pair with a code shown on the phone.
func (t *target) command(sub string) string {
	verb, rest, _ := strings.Cut(sub, " ")
	switch {
	case t == nil:
		return strings.TrimSpace("agentlab bridge " + verb + " [-s SERIAL] " + rest)
	case t.serial != "":
		return strings.TrimSpace("agentlab bridge " + verb + " -s " + t.serial + " " + rest)
	}
	conn := "agentlab bridge pair --connect " + strings.TrimPrefix(t.key, "tcp:") + " <code>"
	if verb != "code" {
		return strings.TrimSpace("agentlab bridge " + verb + " --connect " + strings.TrimPrefix(t.key, "tcp:") + " " + rest)
	}
	show := phoneCode
	if strings.Contains(rest, "--enable") {
		show = strings.Replace(phoneCode, "desktop code", "desktop enable", 1)
	}
	return conn + " with the code from " + show
}

// resolve picks the target without touching the device.
func (o *Options) resolve(ctx context.Context) (*target, error) {
	if o.Connect != "" {
		if p, ok := strings.CutPrefix(o.Connect, "unix:"); ok {
			if p == "" {
				return nil, fail(ExitUsage, nil, "--connect unix: needs a socket path")
			}
			return &target{key: "unix:" + p, network: "unix", addr: p}, nil
		}
		host, port, err := net.SplitHostPort(o.Connect)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
			return nil, fail(ExitUsage, nil, "--connect %q: want host:port or unix:<path>", o.Connect)
		}
		return &target{key: "tcp:" + net.JoinHostPort(host, port), network: "tcp", addr: net.JoinHostPort(host, port)}, nil
	}
	serial := o.Serial
	if serial == "" {
		serial = o.Getenv("ANDROID_SERIAL")
	}
	ready := false
	if serial == "" {
		var err error
		if serial, err = o.onlyDevice(ctx); err != nil {
			return nil, err
		}
		ready = true
	}
	return &target{key: "adb:" + serial, network: "tcp", serial: serial, ready: ready}, nil
}

// adb runs the adb command line.
func (o *Options) adb(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.ADB, args...)
	cmd.Env = o.ADBEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		if msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return string(out), nil
}

// adbDevice is one line of `adb devices`.
type adbDevice struct{ serial, state string }

// devices lists what adb knows (any state).
func (o *Options) devices(ctx context.Context) ([]adbDevice, error) {
	out, err := o.adb(ctx, "devices")
	if err != nil {
		return nil, &Error{Code: ExitDevice, Msg: "adb devices failed", Err: err, Reason: ReasonNoDevice,
			Hint: "is adb installed (apt-get install -y adb)? point --adb or $ADB at it"}
	}
	var list []adbDevice
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && !strings.HasPrefix(line, "List of devices") && !strings.HasPrefix(line, "*") {
			list = append(list, adbDevice{serial: f[0], state: f[1]})
		}
	}
	return list, nil
}

// listed is what adb has, for messages: "A (device), B (offline)".
func listed(list []adbDevice) string {
	if len(list) == 0 {
		return "adb lists no device"
	}
	parts := make([]string, len(list))
	for i, d := range list {
		parts[i] = d.serial + " (" + d.state + ")"
	}
	return "adb lists: " + strings.Join(parts, ", ")
}

// onlyDevice is the one device `adb devices` lists as "device".
func (o *Options) onlyDevice(ctx context.Context) (string, error) {
	list, err := o.devices(ctx)
	if err != nil {
		return "", err
	}
	var ready []string
	for _, d := range list {
		if d.state == "device" {
			ready = append(ready, d.serial)
		}
	}
	switch len(ready) {
	case 1:
		return ready[0], nil
	case 0:
		return "", &Error{Code: ExitDevice, Msg: "no device is connected (" + listed(list) + ")", Reason: ReasonNoDevice,
			Hint: "connect the phone (adb devices lists it as \"device\"), or name one with -s SERIAL"}
	}
	return "", &Error{Code: ExitDevice, Msg: "several devices are connected: " + strings.Join(ready, ", "), Reason: ReasonNoDevice,
		Hint: "choose one with -s SERIAL or $ANDROID_SERIAL"}
}

// checkDevice makes sure adb lists serial as ready: an unknown serial
// is "no such device", not a pairing problem.
func (o *Options) checkDevice(ctx context.Context, serial string) error {
	list, err := o.devices(ctx)
	if err != nil {
		return err
	}
	for _, d := range list {
		if d.serial != serial {
			continue
		}
		switch d.state {
		case "device":
			return nil
		case "unauthorized":
			return &Error{Code: ExitDevice, Msg: "device " + serial + " is unauthorized", Reason: ReasonNoDevice,
				Hint: "unlock the phone and accept the \"Allow USB debugging\" prompt"}
		}
		return &Error{Code: ExitDevice, Msg: "device " + serial + " is " + d.state, Reason: ReasonNoDevice,
			Hint: "reconnect it (adb -s " + serial + " reconnect) and check with: adb devices"}
	}
	return &Error{Code: ExitDevice, Msg: "no such device: " + serial + " (" + listed(list) + ")", Reason: ReasonNoDevice,
		Hint: "check the serial with: adb devices (or adb connect HOST:PORT for a device over the network)"}
}

// forward sets up the adb forward and returns a function removing it.
func (o *Options) forward(ctx context.Context, t *target) (func(), error) {
	local := "tcp:" + strconv.Itoa(o.Port)
	out, err := o.adb(ctx, "-s", t.serial, "forward", local, Socket)
	if err != nil {
		return nil, &Error{Code: ExitDevice, Msg: "adb forward to " + t.serial + " failed", Err: err, Hint: "check the device with: adb -s " + t.serial + " get-state"}
	}
	port := o.Port
	if port == 0 {
		// adb prints the port it chose.
		if port, err = strconv.Atoi(strings.TrimSpace(out)); err != nil || port <= 0 {
			return nil, fail(ExitDevice, nil, "adb forward did not say which port it chose (got %q)", strings.TrimSpace(out))
		}
	}
	t.addr = "127.0.0.1:" + strconv.Itoa(port)
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		o.adb(ctx, "-s", t.serial, "forward", "--remove", "tcp:"+strconv.Itoa(port))
	}, nil
}

// session is one handshaken connection.
type session struct {
	conn net.Conn
	// rest are the bytes the phone sent after the answer line.
	rest []byte
}

// connect dials the target, pairs with code or token and stores a new
// token. It returns the target's cleanup too.
func (o *Options) connect(ctx context.Context, code string, requireCode bool) (*session, func(), error) {
	t, err := o.resolve(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := LoadState(o.StatePath)
	if err != nil {
		return nil, nil, fail(ExitFailure, err, "state file")
	}
	if requireCode && code == "" {
		return nil, nil, fail(ExitUsage, nil, "pair needs the code the phone shows")
	}
	if t.serial != "" && !t.ready {
		// A named serial: adb must know it.
		if err := o.checkDevice(ctx, t.serial); err != nil {
			return nil, nil, err
		}
	}
	stored, havePairing := st.Devices[t.key]
	if code == "" && !havePairing {
		return nil, nil, &Error{Code: ExitAuth, Msg: "not paired with " + t.key, Hint: hint(ReasonPairingRequired, t), Reason: ReasonNotPaired}
	}
	cleanup := func() {}
	if t.serial != "" {
		if cleanup, err = o.forward(ctx, t); err != nil {
			return nil, nil, err
		}
	}
	s, err := o.handshake(ctx, t, code, stored.Token)
	if err != nil {
		cleanup()
		var e *Error
		if errors.As(err, &e) && e.Reason == ReasonInvalidToken && code == "" {
			delete(st.Devices, t.key)
			if serr := st.Save(o.StatePath); serr == nil {
				o.info("forgot the stored token for %s", t.key)
			}
		}
		return nil, nil, err
	}
	if s.token != "" {
		st.Devices[t.key] = Paired{Token: s.token, PairingID: s.pairingID, Label: o.Label, PairedAt: time.Now().UTC().Format(time.RFC3339)}
		if err := st.Save(o.StatePath); err != nil {
			s.conn.Close()
			cleanup()
			return nil, nil, fail(ExitFailure, err, "paired, but the token could not be stored")
		}
		o.info("paired with %s as %q (pairing %s)", t.key, o.Label, s.pairingID)
	}
	return &session{conn: s.conn, rest: s.rest}, cleanup, nil
}

type handshaken struct {
	conn      net.Conn
	rest      []byte
	token     string
	pairingID string
}

// answer is the phone's first line.
type answer struct {
	Result *struct {
		Version      int    `json:"version"`
		PairingID    string `json:"pairingId"`
		Token        string `json:"token"`
		MaxLineChars int    `json:"maxLineChars"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			AgentosCode string `json:"agentosCode"`
			Details     struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"data"`
	} `json:"error"`
}

func (o *Options) handshake(ctx context.Context, t *target, code, token string) (*handshaken, error) {
	d := net.Dialer{Timeout: o.Timeout}
	conn, err := d.DialContext(ctx, t.network, t.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fail(ExitFailure, ctx.Err(), "interrupted")
		}
		return nil, &Error{Code: ExitNotListening, Msg: "the phone is not listening on " + t.key, Err: err, Reason: ReasonNotListening,
			Hint: "make sure the AgentOS runtime is running, and " + hint(ReasonDisabled, t)}
	}
	params := map[string]any{"version": 1, "label": o.Label}
	if code != "" {
		params["code"] = code
	} else {
		params["token"] = token
	}
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": PairMethod, "params": params})
	deadline := time.Now().Add(o.Timeout)
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(append(line, '\n')); err != nil {
		conn.Close()
		return nil, o.readErr(ctx, t, err)
	}
	first, rest, err := readLine(conn, MaxAnswerBytes)
	if err != nil {
		conn.Close()
		return nil, o.readErr(ctx, t, err)
	}
	conn.SetDeadline(time.Time{})
	var a answer
	if err := json.Unmarshal(first, &a); err != nil || (a.Result == nil && a.Error == nil) {
		conn.Close()
		return nil, fail(ExitFailure, nil, "the phone answered the pairing with something that is not a JSON-RPC answer")
	}
	if a.Error != nil {
		conn.Close()
		reason := a.Error.Data.Details.Reason
		if a.Error.Data.AgentosCode == "busy" {
			return nil, &Error{Code: ExitFailure, Msg: "refused: " + a.Error.Message, Reason: ReasonBusy, Hint: "too many desktop connections are open; close one and try again"}
		}
		msg := "refused (" + reason + "): " + a.Error.Message
		if reason == "" {
			msg = "refused: " + a.Error.Message
		}
		return nil, &Error{Code: ExitAuth, Msg: msg, Hint: hint(reason, t), Reason: reason}
	}
	return &handshaken{conn: conn, rest: rest, token: a.Result.Token, pairingID: a.Result.PairingID}, nil
}

// readErr classifies a failure before the answer line.
func (o *Options) readErr(ctx context.Context, t *target, err error) error {
	switch {
	case ctx.Err() != nil:
		return fail(ExitFailure, ctx.Err(), "interrupted")
	case errors.Is(err, errTooLong):
		return fail(ExitFailure, err, "the phone's answer to the pairing is too long")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Code: ExitFailure, Msg: fmt.Sprintf("the phone did not answer the pairing within %s", o.Timeout), Hint: "is the runtime busy or stuck? try again, or raise --timeout"}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return &Error{Code: ExitNotListening, Msg: "the connection to " + t.key + " closed before the phone answered", Reason: ReasonNotListening,
			Hint: "desktop access is probably off, or the runtime is not running: " + hint(ReasonDisabled, t)}
	}
	return fail(ExitFailure, err, "pairing with %s", t.key)
}

var errTooLong = errors.New("line too long")

// readLine reads up to the first '\n' (at most max bytes) and returns the
// line and whatever came after it in the same reads.
func readLine(r io.Reader, max int) ([]byte, []byte, error) {
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return buf[:i], buf[i+1:], nil
		}
		if len(buf) > max {
			return nil, nil, errTooLong
		}
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				return buf[:i], buf[i+1:], nil
			}
			if errors.Is(err, io.EOF) && len(buf) > 0 {
				return nil, nil, io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
	}
}

// Pair pairs with the device using code, stores the token and returns.
func Pair(ctx context.Context, opts Options, code string) error {
	o := opts
	o.normalize()
	s, cleanup, err := o.connect(ctx, strings.TrimSpace(code), true)
	if err != nil {
		return err
	}
	s.conn.Close()
	cleanup()
	return nil
}

// Unpair forgets this computer's token for the device. (The phone keeps
// the pairing until it is revoked there.)
func Unpair(ctx context.Context, opts Options) error {
	o := opts
	o.normalize()
	t, err := o.resolve(ctx)
	if err != nil {
		return err
	}
	st, err := LoadState(o.StatePath)
	if err != nil {
		return fail(ExitFailure, err, "state file")
	}
	if _, ok := st.Devices[t.key]; !ok {
		o.info("not paired with %s; nothing to forget", t.key)
		return nil
	}
	delete(st.Devices, t.key)
	if err := st.Save(o.StatePath); err != nil {
		return fail(ExitFailure, err, "state file")
	}
	o.info("forgot %s (revoke it on the phone too: agentosd ctl desktop list / revoke)", t.key)
	return nil
}

// Run is the bridge: pair (with the code or the stored token), then carry
// ACP lines from stdin to the phone and from the phone to stdout (see
// proxy) until stdin ends (exit 0), the phone closes (exit 6) or ctx
// ends (exit 1). When the phone cannot be reached or refuses, the
// editor's first request is answered with a JSON-RPC error that says
// what to do (within RefuseWait) before Run returns the error.
//
// When Stdin is an io.Closer it is closed on return, so that the goroutine
// reading it ends; a Stdin that is not cannot be interrupted and its copy
// ends at its next read.
func Run(ctx context.Context, opts Options) error {
	o := opts
	o.normalize()
	s, cleanup, err := o.connect(ctx, strings.TrimSpace(o.Code), false)
	if err != nil {
		if ctx.Err() == nil {
			o.answerRefusal(err)
		}
		if c, ok := o.Stdin.(io.Closer); ok {
			c.Close()
		}
		return err
	}
	defer cleanup()
	defer s.conn.Close()
	p := newProxy()
	stdinDone := make(chan error, 1)
	stdinEnded := make(chan struct{}) // closed before the phone can see the end
	phoneDone := make(chan error, 1)
	go func() {
		err := copyLines(s.conn, o.Stdin, p.fromEditor)
		close(stdinEnded)
		if cw, ok := s.conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		stdinDone <- err
	}()
	go func() {
		phoneDone <- copyLines(o.Stdout, io.MultiReader(bytes.NewReader(s.rest), s.conn), p.fromPhone)
	}()
	defer func() {
		if c, ok := o.Stdin.(io.Closer); ok {
			c.Close()
			<-stdinDone
		}
	}()
	select {
	case <-ctx.Done():
		s.conn.Close()
		<-phoneDone
		return fail(ExitFailure, ctx.Err(), "interrupted")
	case <-phoneDone:
		s.conn.Close()
		select {
		case <-stdinEnded:
			// stdin had ended too: that is the normal end.
			return nil
		default:
		}
		return &Error{Code: ExitClosed, Msg: "the phone closed the connection", Hint: "desktop access may have been turned off or this computer revoked; the runtime may have restarted"}
	case err := <-stdinDone:
		// stdin ended: let the phone's last answers through, briefly.
		stdinDone <- err
		t := time.NewTimer(drainGrace)
		defer t.Stop()
		select {
		case <-phoneDone:
		case <-t.C:
			s.conn.Close()
			<-phoneDone
		case <-ctx.Done():
			s.conn.Close()
			<-phoneDone
		}
		return nil
	}
}
