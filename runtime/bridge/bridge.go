package bridge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Limits of spec §4.7.
const (
	MaxPairings       = 16
	MaxEstablished    = 8
	MaxHandshaking    = 4
	MaxHandshakeChars = 4096
	HandshakeTimeout  = 10 * time.Second
	CodeTTL           = 5 * time.Minute
	MaxCodeAttempts   = 5
	CodeDigits        = 6
	maxCloseRecords   = 20
	writeTimeout      = 5 * time.Second
)

// Default peer uids: root and shell (adbd).
var defaultUIDs = []int{0, 2000}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// ServeFunc runs ACP on a paired connection (acp.Agent.Serve).
type ServeFunc func(ctx context.Context, c engine.Caller, s *transport.RPCStream)

// Options configure a Bridge. Dir and Serve are required.
type Options struct {
	// Dir holds pairing.json (<data>/desktop).
	Dir string
	// Name is the socket; "" means transport.Names{}.ACP().
	Name  string
	Serve ServeFunc
	// AllowUIDs are the peer uids admitted; nil means 0 and 2000.
	AllowUIDs []int
	// Clock times the pairing code and stamps pairings and closes; nil
	// means the real clock.
	Clock clock.Clock
	// Rand is the randomness for codes, tokens and ids; nil means
	// crypto/rand.
	Rand io.Reader
	// HandshakeTimeout overrides the 10 s first-line deadline (tests).
	HandshakeTimeout time.Duration
	// Logger receives uids, pairing ids and reasons, never codes or
	// tokens; nil discards.
	Logger *slog.Logger
}

// CloseRecord is one closed desktop connection, for diagnostics.
type CloseRecord struct {
	AtMillis   int64  `json:"atMillis"`
	UID        int    `json:"uid"`
	Reason     string `json:"reason"`
	PairingID  string `json:"pairingId,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

// Status is desktop access as `desktop status` shows it.
type Status struct {
	Enabled     bool          `json:"enabled"`
	Listening   bool          `json:"listening"`
	ListenError string        `json:"listenError,omitempty"`
	Established int           `json:"established"`
	Handshaking int           `json:"handshaking"`
	Pairings    int           `json:"pairings"`
	CodeActive  bool          `json:"codeActive"`
	CodeLeftMs  int64         `json:"codeLeftMs,omitempty"`
	Health      string        `json:"health"`
	Closes      []CloseRecord `json:"closes"`
}

// PairingInfo is a pairing as `desktop list` shows it (no token hash).
type PairingInfo struct {
	ID             string `json:"id"`
	Label          string `json:"label"`
	PairedAtMillis int64  `json:"pairedAtMillis"`
	LastSeenMillis int64  `json:"lastSeenMillis"`
	Connections    int    `json:"connections"`
}

// Errors of the owner operations.
var (
	// ErrDisabled: the operation needs desktop access on.
	ErrDisabled = errcode.New(errcode.InvalidState, "desktop access is turned off")
	// ErrNotFound: no pairing with that id.
	ErrNotFound = errcode.New(errcode.InvalidParams, "no such pairing")
)

type code struct {
	digits   string
	expires  time.Time // on the bridge's clock
	attempts int
}

// Bridge is desktop access. Safe for concurrent use; Close stops it.
type Bridge struct {
	dir   string
	name  string
	serve ServeFunc
	uids  []int
	clock clock.Clock
	rand  io.Reader
	hsTO  time.Duration
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // services being closed after a disable

	mu          sync.Mutex // guards the fields below
	state       State
	health      string
	code        *code
	svc         *transport.Service // the socket while desktop access is on
	listenErr   string
	handshaking map[net.Conn]bool
	established map[net.Conn]string // pairing id
	closes      []CloseRecord
	closed      bool
}

// Open loads pairing.json (unreadable → defaults, access off) and, when
// access is on, starts listening.
func Open(opts *Options) (*Bridge, error) {
	if opts == nil || opts.Dir == "" || opts.Serve == nil {
		return nil, errors.New("bridge: Dir and Serve are required")
	}
	b := &Bridge{dir: opts.Dir, name: opts.Name, serve: opts.Serve, uids: opts.AllowUIDs, clock: clock.Or(opts.Clock),
		rand: opts.Rand, hsTO: opts.HandshakeTimeout, log: opts.Logger,
		handshaking: map[net.Conn]bool{}, established: map[net.Conn]string{}}
	if b.name == "" {
		b.name = transport.Names{}.ACP()
	}
	if b.uids == nil {
		b.uids = defaultUIDs
	}
	if b.rand == nil {
		b.rand = rand.Reader
	}
	if b.hsTO <= 0 {
		b.hsTO = HandshakeTimeout
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.state, b.health = loadState(b.dir)
	if b.health != "" {
		b.log.Warn("bridge: " + b.health)
	} else {
		b.health = "ok"
	}
	if b.state.Enabled {
		b.mu.Lock()
		b.listenLocked()
		b.mu.Unlock()
	}
	return b, nil
}

// Name is the socket name.
func (b *Bridge) Name() string { return b.name }

// Close stops listening and closes every connection (pairings are kept).
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.closed = true
	b.stopLocked()
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	return nil
}

// listenLocked starts the listener; a failure (name squatted) is kept in
// the status.
func (b *Bridge) listenLocked() error {
	if b.svc != nil || b.closed {
		return nil
	}
	svc := new(transport.Service)
	if err := svc.Start(b.ctx, b.name, b.admit); err != nil {
		b.listenErr = err.Error()
		b.log.Error("bridge: cannot listen", "err", err)
		return fmt.Errorf("bridge: %w", err)
	}
	b.svc, b.listenErr = svc, ""
	return nil
}

// stopLocked stops the socket and closes every connection. It does not
// wait: the connections' ends take b.mu, so the service is waited for
// outside it (here by a goroutine Close waits for).
func (b *Bridge) stopLocked() {
	if b.svc == nil {
		return
	}
	svc := b.svc
	b.svc = nil
	svc.Stop()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		svc.Close()
	}()
}

func (b *Bridge) saveLocked() error {
	st := b.state
	st.Pairings = slices.Clone(st.Pairings)
	if err := saveState(b.dir, st); err != nil {
		b.health = "pairing file not writable"
		b.log.Error("bridge: pairing file not saved", "err", err)
		return err
	}
	return nil
}

// Enable turns desktop access on (persisted), listens, and returns a new
// pairing code.
func (b *Bridge) Enable() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.state.Enabled {
		b.state.Enabled = true
		if err := b.saveLocked(); err != nil {
			b.state.Enabled = false
			return "", errcode.Wrap(errcode.StoreFailed, "the pairing file could not be written", err)
		}
	}
	if err := b.listenLocked(); err != nil {
		return "", errcode.Wrap(errcode.Busy, "the desktop socket is taken by another process", err)
	}
	return b.newCodeLocked()
}

// Disable turns desktop access off: the socket goes away, every desktop
// connection is closed, and the code and all pairings are dropped.
func (b *Bridge) Disable() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state.Enabled = false
	b.state.Pairings = []Pairing{}
	b.code = nil
	if !(faultinject.Enabled && faultinject.Active(faultinject.DesktopOffKeepsConnected)) { // the fault keeps socket and connections
		b.stopLocked()
	}
	if err := b.saveLocked(); err != nil {
		return errcode.Wrap(errcode.StoreFailed, "the pairing file could not be written", err)
	}
	return nil
}

// NewCode replaces the active code with a new one.
func (b *Bridge) NewCode() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.state.Enabled {
		return "", ErrDisabled
	}
	return b.newCodeLocked()
}

func (b *Bridge) newCodeLocked() (string, error) {
	n, err := rand.Int(b.rand, big.NewInt(1_000_000))
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, "no randomness", err)
	}
	c := &code{digits: fmt.Sprintf("%06d", n.Int64()), expires: b.clock.Now().Add(CodeTTL)}
	b.code = c
	b.log.Info("bridge: new pairing code")
	return c.digits, nil
}

// Revoke drops one pairing and disconnects its connections.
func (b *Bridge) Revoke(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.state.Pairings, func(p Pairing) bool { return p.ID == id })
	if i < 0 {
		return ErrNotFound
	}
	b.state.Pairings = slices.Delete(b.state.Pairings, i, i+1)
	b.disconnectLocked(id)
	if err := b.saveLocked(); err != nil {
		return errcode.Wrap(errcode.StoreFailed, "the pairing file could not be written", err)
	}
	b.log.Info("bridge: pairing revoked", "pairing", id)
	return nil
}

func (b *Bridge) disconnectLocked(id string) {
	for c, pid := range b.established {
		if pid == id {
			c.Close()
		}
	}
}

// List returns the pairings, most recently seen first.
func (b *Bridge) List() []PairingInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []PairingInfo{}
	for _, p := range b.state.Pairings {
		n := 0
		for _, pid := range b.established {
			if pid == p.ID {
				n++
			}
		}
		out = append(out, PairingInfo{ID: p.ID, Label: p.Label, PairedAtMillis: p.PairedAtMillis, LastSeenMillis: p.LastSeenMillis, Connections: n})
	}
	slices.SortFunc(out, func(a, b PairingInfo) int { return int(b.LastSeenMillis - a.LastSeenMillis) })
	return out
}

// Status reports desktop access.
func (b *Bridge) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Status{Enabled: b.state.Enabled, Listening: b.svc != nil, ListenError: b.listenErr,
		Established: len(b.established), Handshaking: len(b.handshaking), Pairings: len(b.state.Pairings),
		Health: b.health, Closes: slices.Clone(b.closes)}
	if b.code != nil {
		if left := b.code.expires.Sub(b.clock.Now()); left > 0 {
			s.CodeActive, s.CodeLeftMs = true, left.Milliseconds()
		}
	}
	if s.Closes == nil {
		s.Closes = []CloseRecord{}
	}
	return s
}

func (b *Bridge) record(uid int, reason, pairing string, start time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closes = append(b.closes, CloseRecord{AtMillis: b.clock.Now().UnixMilli(), UID: uid, Reason: reason,
		PairingID: pairing, DurationMs: time.Since(start).Milliseconds()})
	if len(b.closes) > maxCloseRecords {
		b.closes = b.closes[len(b.closes)-maxCloseRecords:]
	}
}

// admit closes peers other than adbd and root without reading a byte,
// and answers busy over the connection limits (spec §8.1).
func (b *Bridge) admit(c *transport.Conn) transport.Admission {
	uid := c.Cred().UID
	start := time.Now() // for DurationMs, a measurement: wall time
	if !slices.Contains(b.uids, uid) && !(faultinject.Enabled && faultinject.Active(faultinject.DesktopAnyUID)) {
		b.record(uid, "uid_not_allowed", "", start)
		return transport.Refuse(nil)
	}
	b.mu.Lock()
	full := b.closed || len(b.established) >= MaxEstablished || len(b.handshaking) >= MaxHandshaking
	if !full {
		b.handshaking[c] = true
	}
	b.mu.Unlock()
	if full {
		return transport.Admission{Reply: busyLine, Done: func() { b.record(uid, "busy", "", start) }}
	}
	return transport.Admission{
		Serve: func(_ context.Context, c *transport.Conn) { b.serveConn(c, start) },
		// Also when the service stopped before serving c.
		Done: func() {
			b.mu.Lock()
			delete(b.handshaking, c)
			b.mu.Unlock()
		},
	}
}

var busyLine = errcode.ErrorLine(nil, errcode.New(errcode.Busy, "too many desktop connections").Wire())

func writeLine(c net.Conn, line []byte) error {
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	defer c.SetWriteDeadline(time.Time{})
	_, err := c.Write(line)
	return err
}

func (b *Bridge) serveConn(c *transport.Conn, start time.Time) {
	uid := c.Cred().UID
	reason, pairing := "closed", ""
	defer func() {
		c.Close()
		b.mu.Lock()
		delete(b.handshaking, c)
		delete(b.established, c)
		b.mu.Unlock()
		b.record(uid, reason, pairing, start)
	}()
	c.SetReadDeadline(time.Now().Add(b.hsTO))
	lr := transport.NewLineReader(c, transport.MaxLineChars)
	line, err := lr.ReadLine()
	if err != nil {
		// Timeout, an over-long line or a peer gone: no reply.
		reason = "handshake_read"
		return
	}
	if transport.UTF16Len(line) > MaxHandshakeChars {
		reason = "handshake_too_long"
		return
	}
	c.SetReadDeadline(time.Time{})
	req, perr := ParsePairLine(line)
	var fresh bool
	var token string
	if perr == nil {
		pairing, token, fresh, perr = b.verify(req, c)
	}
	if perr != nil {
		reason = "auth:" + perr.Reason
		b.log.Info("bridge: pairing refused", "uid", uid, "reason", perr.Reason)
		writeLine(c, errcode.ErrorLine(perr.ID, perr.Wire()))
		return
	}
	res := map[string]any{"version": 1, "pairingId": pairing, "maxLineChars": transport.MaxLineChars}
	if token != "" {
		res["token"] = token
	}
	reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
	if err := writeLine(c, append(reply, '\n')); err != nil {
		if fresh {
			// The computer never got its token: the pairing is useless.
			b.Revoke(pairing)
		}
		reason = "reply_failed"
		return
	}
	b.log.Info("bridge: desktop paired in", "uid", uid, "pairing", pairing, "new", fresh)
	stream := transport.NewRPCStreamFromLines(c, lr, &transport.RPCOptions{Logger: b.log})
	b.serve(b.ctx, engine.Caller{Kind: engine.CallerDesktop, UID: uid, Label: defaultLabel}, stream)
	stream.Close()
}

// verify checks a code or token and registers the connection as
// established under its pairing.
func (b *Bridge) verify(req PairRequest, c net.Conn) (id, token string, fresh bool, _ *PairError) {
	fail := func(reason string) (string, string, bool, *PairError) {
		return "", "", false, &PairError{ID: req.ID, Reason: reason}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.state.Enabled || b.closed {
		return fail(ReasonDisabled)
	}
	now := b.clock.Now()
	if req.HasCode {
		cd := b.code
		if cd == nil {
			return fail(ReasonInvalidCode)
		}
		if !now.Before(cd.expires) {
			b.code = nil
			return fail(ReasonCodeExpired)
		}
		if subtle.ConstantTimeCompare([]byte(req.Code), []byte(cd.digits)) != 1 {
			cd.attempts++
			if cd.attempts >= MaxCodeAttempts && !(faultinject.Enabled && faultinject.Active(faultinject.PairingAttemptsUnlimited)) {
				b.code = nil
				return fail(ReasonTooManyAttempts)
			}
			return fail(ReasonInvalidCode)
		}
		if !(faultinject.Enabled && faultinject.Active(faultinject.PairingCodeReusable)) { // the fault keeps the used code
			b.code = nil
		}
		tok, idHex, err := b.newSecrets()
		if err != nil {
			return fail(ReasonInvalidCode)
		}
		sum := sha256.Sum256([]byte(tok))
		p := Pairing{ID: "dp_" + idHex, TokenSHA256: hex.EncodeToString(sum[:]), Label: req.Label,
			PairedAtMillis: now.UnixMilli(), LastSeenMillis: now.UnixMilli()}
		if len(b.state.Pairings) >= MaxPairings {
			// Drop the least recently seen.
			i := 0
			for j, q := range b.state.Pairings {
				if q.LastSeenMillis < b.state.Pairings[i].LastSeenMillis {
					i = j
				}
			}
			b.disconnectLocked(b.state.Pairings[i].ID)
			b.state.Pairings = slices.Delete(b.state.Pairings, i, i+1)
		}
		b.state.Pairings = append(b.state.Pairings, p)
		b.saveLocked()
		delete(b.handshaking, c)
		b.established[c] = p.ID
		return p.ID, tok, true, nil
	}
	if !tokenRE.MatchString(req.Token) {
		return fail(ReasonInvalidToken)
	}
	sum := sha256.Sum256([]byte(req.Token))
	want := []byte(hex.EncodeToString(sum[:]))
	match := -1
	for i, p := range b.state.Pairings {
		// Compare with every pairing, in constant time each.
		if subtle.ConstantTimeCompare(want, []byte(p.TokenSHA256)) == 1 {
			match = i
		}
	}
	if match < 0 {
		return fail(ReasonInvalidToken)
	}
	b.state.Pairings[match].LastSeenMillis = now.UnixMilli()
	b.saveLocked()
	delete(b.handshaking, c)
	b.established[c] = b.state.Pairings[match].ID
	return b.state.Pairings[match].ID, "", false, nil
}

// newSecrets returns a token (32 random bytes, base64url without padding)
// and 6 random bytes of pairing id in hex.
func (b *Bridge) newSecrets() (string, string, error) {
	var buf [38]byte
	if _, err := io.ReadFull(b.rand, buf[:]); err != nil {
		return "", "", err
	}
	return base64.RawURLEncoding.EncodeToString(buf[:32]), hex.EncodeToString(buf[32:]), nil
}
