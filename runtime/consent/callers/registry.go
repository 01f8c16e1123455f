package callers

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// State of an app's authorization.
type State string

const (
	StatePending State = "pending"
	StateAllowed State = "allowed"
	StateDenied  State = "denied"
	// StateRemoved is only an argument of Set: forget the app.
	StateRemoved State = "removed"
)

// Limits that are not configurable.
const (
	maxLabelChars  = 64 // cleaned app label, code points
	maxUIDs        = 16 // uids remembered per package
	maxRevocations = 32
)

// Config are the registry's timings and limits (spec §4.4). A zero field
// takes the default shown.
type Config struct {
	DenyCooldown               time.Duration // 10 min
	PendingTTL                 time.Duration // 100 s: no decision counts as a denial
	AbandonAfter               time.Duration // 5 s without a retry withdraws the card
	AbandonCountsAsDenialAfter time.Duration // 85 s
	CardTimeout                time.Duration // 90 s: countdown shown on the card
	MaxPending                 int           // 8
	MaxEntries                 int           // 64
}

func (c Config) withDefaults() Config {
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&c.DenyCooldown, 10*time.Minute)
	dur(&c.PendingTTL, 100*time.Second)
	dur(&c.AbandonAfter, 5*time.Second)
	dur(&c.AbandonCountsAsDenialAfter, 85*time.Second)
	dur(&c.CardTimeout, 90*time.Second)
	if c.MaxPending <= 0 {
		c.MaxPending = 8
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = 64
	}
	return c
}

// Canceller cancels an owner's tasks; *engine.Engine satisfies it.
type Canceller interface {
	CancelOwner(ctx context.Context, ownerKey, by string) ([]string, error)
}

// Usage is what the list shows of an app's use, summed over its uids.
type Usage struct {
	PromptsTotal    int64 `json:"promptsTotal"`
	PromptsLastHour int   `json:"promptsLastHour"`
	ActiveChannels  int   `json:"activeChannels"`
	ActiveTasks     int   `json:"activeTasks"`
}

// Options configure a Registry. Dir is required.
type Options struct {
	// Dir holds callers.json (<data>/acp).
	Dir    string
	Config Config
	// Clock times cooldowns, the pending TTL and abandonment, and stamps
	// decisions; nil means the real clock.
	Clock clock.Clock
	// Canceller cancels a revoked app's tasks; nil cancels nothing.
	Canceller Canceller
	// Usage reports an ownerKey's prompt and task counters for the list;
	// nil reports zeros (activeChannels is always the registry's own).
	Usage func(ownerKey string) (promptsTotal int64, promptsLastHour, activeTasks int)
	// Logger receives packages, states and counts; nil discards.
	Logger *slog.Logger
}

// App is a caller as the package table reports it for a connection's uid.
type App struct {
	UID           int
	Package       string
	Label         string
	SigningDigest string
}

// Reason is why an open was refused (spec §2.1).
type Reason string

const (
	ReasonPending Reason = "authorization_pending"
	ReasonDenied  Reason = "denied"
	ReasonNotOpen Reason = "not_open"
)

// Refusal is an open refused by the registry. Its message is
// "agentos.acp.<reason>: <text>", the text the Binder SecurityException
// carried upstream.
type Refusal struct {
	Reason    Reason
	Text      string
	RequestID string // for ReasonPending
}

func (r *Refusal) Error() string { return "agentos.acp." + string(r.Reason) + ": " + r.Text }

// Errors of the registry's owner operations, with spec §3.6's codes.
var (
	// ErrNotFound: unknown package or request id (agentos.acp.not_found).
	ErrNotFound = errors.New("agentos.acp.not_found")
	// ErrBadState: an unknown state for Set (agentos.acp.bad_state).
	ErrBadState = errors.New("agentos.acp.bad_state")
	// ErrUnavailable: the registry file could not be written
	// (agentos.acp.registry_unavailable).
	ErrUnavailable = errors.New("agentos.acp.registry_unavailable")
)

// entry is one app; guarded by Registry.mu.
type entry struct {
	rec Record // persisted form (State may be pending: then not persisted)

	requestID   string
	requestedAt time.Time
	lastTry     time.Time
	stopTTL     clock.Timer // pending TTL timer
	stopAbandon clock.Timer // abandon timer, re-armed on every try

	channels map[*Channel]struct{}
}

// Channel is an open caller channel the registry tracks, so that a
// revocation can close it.
type Channel struct {
	r     *Registry
	pkg   string
	close func()
	once  sync.Once
}

// Detach stops tracking the channel (it closed). Idempotent.
func (c *Channel) Detach() {
	c.once.Do(func() {
		c.r.mu.Lock()
		defer c.r.mu.Unlock()
		if e := c.r.entries[c.pkg]; e != nil {
			delete(e.channels, c)
		}
		c.r.open--
	})
}

// Revocation records one revocation for diagnostics.
type Revocation struct {
	PackageName     string   `json:"packageName"`
	At              int64    `json:"at"`
	ClosedChannels  int      `json:"closedChannels"`
	CancelRequested []string `json:"cancelRequested"`
	Owners          []string `json:"owners"`
	WaitedMs        int64    `json:"waitedMs"`
}

// Registry is the authorization registry. Safe for concurrent use.
type Registry struct {
	dir       string
	clock     clock.Clock
	canceller Canceller
	usage     func(string) (int64, int, int)
	log       *slog.Logger

	saveMu sync.Mutex // serializes file writes (taken before mu)

	mu          sync.Mutex // guards the fields below
	cfg         Config
	entries     map[string]*entry
	open        int // tracked channels
	revocations []Revocation
	// resigned marks packages whose signer changed since their grant: the
	// next authorization request is flagged signatureChanged.
	resigned map[string]bool
	health   string
	closed   bool
}

// Open loads the registry from opts.Dir.
func Open(opts *Options) (*Registry, error) {
	if opts == nil || opts.Dir == "" {
		return nil, errors.New("callers: Dir is required")
	}
	r := &Registry{
		dir: opts.Dir, clock: opts.Clock, canceller: opts.Canceller, usage: opts.Usage, log: opts.Logger,
		cfg: opts.Config.withDefaults(), entries: map[string]*entry{}, resigned: map[string]bool{}, health: "ok",
	}
	r.clock = clock.Or(r.clock)
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	recs, note, err := loadFile(r.dir, r.cfg.MaxEntries)
	if err != nil {
		return nil, err
	}
	if note != "" {
		r.health = note
		r.log.Warn("callers: " + note)
	}
	for _, rec := range recs {
		r.entries[rec.PackageName] = &entry{rec: rec, channels: map[*Channel]struct{}{}}
	}
	return r, nil
}

// SetConfig replaces the timings and limits (admin `callers config`, for
// tests); zero fields take the defaults. It applies to decisions made
// from now on.
func (r *Registry) SetConfig(c Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg = c.withDefaults()
}

// Config returns the configuration in force.
func (r *Registry) Config() Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// Close stops the registry's timers. Pending entries are dropped.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, e := range r.entries {
		e.stopTimersLocked()
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// CleanLabel is an app label as shown anywhere: sanitised to one line of
// at most 64 code points; an empty label shows the package name.
func CleanLabel(label, pkg string) string {
	if l := consent.SingleLine(label, maxLabelChars); l != "" {
		return l
	}
	return pkg
}

// OpenChannel decides an open of the caller channel by app (identity from the
// package table). When the app is allowed, the channel is tracked (close
// is called on revocation) and returned; the caller must Detach it when
// the connection ends. Otherwise the error is a *Refusal.
func (r *Registry) OpenChannel(app App, close func()) (*Channel, error) {
	if app.Package == "" || !digestRE.MatchString(app.SigningDigest) {
		return nil, &Refusal{Reason: ReasonNotOpen, Text: "this app has no verified package identity"}
	}
	r.mu.Lock()
	ch, revoked, save, err := r.openLocked(app, close)
	r.mu.Unlock()
	for _, c := range revoked {
		c.close()
	}
	if save {
		r.save()
	}
	return ch, err
}

func (r *Registry) openLocked(app App, close func()) (ch *Channel, revoked []*Channel, save bool, err error) {
	now := r.clock.Now()
	label := CleanLabel(app.Label, app.Package)
	if r.closed {
		return nil, nil, false, &Refusal{Reason: ReasonNotOpen, Text: "the runtime is stopping"}
	}
	full := &Refusal{Reason: ReasonNotOpen, Text: "too many apps are waiting for authorization, or too many are remembered"}
	e := r.entries[app.Package]
	if e != nil && e.rec.SigningDigest != app.SigningDigest && faultinject.Enabled && faultinject.Active(faultinject.SignatureKeepsGrant) {
		e.rec.SigningDigest = app.SigningDigest // injected fault: the grant stays
	}
	if e != nil && e.rec.SigningDigest != app.SigningDigest {
		// A new signer: the old grant is revoked at once and the app is
		// asked again.
		revoked = r.takeChannelsLocked(e)
		persisted := e.rec.State != StatePending
		r.dropLocked(e)
		r.log.Warn("callers: signing digest changed", "package", app.Package)
		e = r.newPendingLocked(app, label, now, true)
		if e == nil {
			return nil, revoked, persisted, full
		}
		return nil, revoked, persisted, r.pendingRefusalLocked(e, now)
	}
	if e == nil {
		e = r.newPendingLocked(app, label, now, r.resigned[app.Package])
		if e == nil {
			return nil, nil, false, full
		}
		delete(r.resigned, app.Package)
		return nil, nil, false, r.pendingRefusalLocked(e, now)
	}
	switch e.rec.State {
	case StateAllowed:
		e.rec.LastUsedAt = ms(now)
		e.rec.Label = label
		if !slices.Contains(e.rec.UIDs, app.UID) {
			e.rec.UIDs = append(e.rec.UIDs, app.UID)
			if len(e.rec.UIDs) > maxUIDs {
				e.rec.UIDs = e.rec.UIDs[len(e.rec.UIDs)-maxUIDs:]
			}
			save = true
		}
		ch := &Channel{r: r, pkg: app.Package, close: close}
		e.channels[ch] = struct{}{}
		r.open++
		return ch, nil, save, nil
	case StatePending:
		return nil, nil, false, r.pendingRefusalLocked(e, now)
	default: // denied
		if now.UnixMilli() < e.rec.DeniedUntil && !(faultinject.Enabled && faultinject.Active(faultinject.CooldownIgnored)) { // the fault skips the cooldown
			return nil, nil, false, &Refusal{Reason: ReasonDenied, Text: "the user denied this app access to AgentOS; try again later"}
		}
		// Cooldown over: ask again.
		old := e
		r.dropLocked(old)
		e = r.newPendingLocked(app, label, now, old.rec.SignatureChanged)
		if e == nil {
			r.entries[old.rec.PackageName] = old
			return nil, nil, false, full
		}
		e.rec.FirstSeenAt = old.rec.FirstSeenAt
		e.rec.UIDs = old.rec.UIDs
		if !slices.Contains(e.rec.UIDs, app.UID) {
			e.rec.UIDs = append(e.rec.UIDs, app.UID)
		}
		return nil, nil, true, r.pendingRefusalLocked(e, now)
	}
}

func (r *Registry) pendingRefusalLocked(e *entry, now time.Time) *Refusal {
	e.lastTry = now
	r.armAbandonLocked(e)
	return &Refusal{Reason: ReasonPending, RequestID: e.requestID,
		Text: "waiting for the user to allow this app to use AgentOS; retry in a second"}
}

// newPendingLocked creates a PENDING entry, or returns nil when the
// pending limit is reached or the table is full (evicting the oldest
// DENIED entry first).
func (r *Registry) newPendingLocked(app App, label string, now time.Time, sigChanged bool) *entry {
	pending := 0
	for _, e := range r.entries {
		if e.rec.State == StatePending {
			pending++
		}
	}
	if pending >= r.cfg.MaxPending {
		return nil
	}
	if len(r.entries) >= r.cfg.MaxEntries {
		var oldest *entry
		for _, e := range r.entries {
			if e.rec.State == StateDenied && (oldest == nil || e.rec.DecidedAt < oldest.rec.DecidedAt) {
				oldest = e
			}
		}
		if oldest == nil {
			return nil
		}
		r.dropLocked(oldest)
	}
	e := &entry{
		rec: Record{PackageName: app.Package, Label: label, SigningDigest: app.SigningDigest, State: StatePending,
			FirstSeenAt: ms(now), UIDs: []int{app.UID}, SignatureChanged: sigChanged},
		requestID: uuid.NewString(), requestedAt: now, channels: map[*Channel]struct{}{},
	}
	r.entries[app.Package] = e
	e.stopTTL = r.clock.AfterFunc(r.cfg.PendingTTL, func() { r.expire(e) })
	r.log.Info("callers: authorization requested", "package", app.Package, "request", e.requestID)
	return e
}

// armAbandonLocked (re)starts the timer that withdraws the card when the
// app stops retrying.
func (r *Registry) armAbandonLocked(e *entry) {
	if e.stopAbandon != nil {
		e.stopAbandon.Stop()
	}
	try := e.lastTry
	e.stopAbandon = r.clock.AfterFunc(r.cfg.AbandonAfter, func() { r.abandon(e, try) })
}

// expire: no decision within the pending TTL counts as a denial.
func (r *Registry) expire(e *entry) {
	r.mu.Lock()
	if r.entries[e.rec.PackageName] != e || e.rec.State != StatePending {
		r.mu.Unlock()
		return
	}
	r.decideLocked(e, StateDenied, r.clock.Now())
	r.log.Info("callers: no decision, denied", "package", e.rec.PackageName)
	r.mu.Unlock()
	r.save()
}

// abandon withdraws a card whose app stopped retrying (lastTry is the try
// the timer was armed for; a later try re-armed another timer).
func (r *Registry) abandon(e *entry, lastTry time.Time) {
	r.mu.Lock()
	if r.entries[e.rec.PackageName] != e || e.rec.State != StatePending || !e.lastTry.Equal(lastTry) {
		r.mu.Unlock()
		return
	}
	now := r.clock.Now()
	if now.Sub(e.requestedAt) >= r.cfg.AbandonCountsAsDenialAfter {
		r.decideLocked(e, StateDenied, now)
		r.mu.Unlock()
		r.log.Info("callers: card abandoned late, denied", "package", e.rec.PackageName)
		r.save()
		return
	}
	r.dropLocked(e)
	r.mu.Unlock()
	r.log.Info("callers: card withdrawn", "package", e.rec.PackageName)
}

// decideLocked makes e ALLOWED or DENIED at now.
func (r *Registry) decideLocked(e *entry, s State, now time.Time) {
	e.stopTimersLocked()
	e.requestID, e.requestedAt, e.lastTry = "", time.Time{}, time.Time{}
	e.rec.State = s
	e.rec.DecidedAt = ms(now)
	e.rec.DeniedUntil = 0
	if s == StateDenied {
		e.rec.DeniedUntil = ms(now.Add(r.cfg.DenyCooldown))
	}
	if s == StateAllowed {
		e.rec.SignatureChanged = false
	}
}

func (e *entry) stopTimersLocked() {
	if e.stopTTL != nil {
		e.stopTTL.Stop()
		e.stopTTL = nil
	}
	if e.stopAbandon != nil {
		e.stopAbandon.Stop()
		e.stopAbandon = nil
	}
}

func (r *Registry) dropLocked(e *entry) {
	e.stopTimersLocked()
	if r.entries[e.rec.PackageName] == e {
		delete(r.entries, e.rec.PackageName)
	}
}

// takeChannelsLocked detaches every channel of e and returns them for
// closing.
func (r *Registry) takeChannelsLocked(e *entry) []*Channel {
	var out []*Channel
	for c := range e.channels {
		out = append(out, c)
		delete(e.channels, c)
		c.once.Do(func() { r.open-- })
	}
	return out
}

// save writes the persisted entries.
func (r *Registry) save() error {
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	r.mu.Lock()
	var recs []Record
	for _, e := range r.entries {
		if e.rec.State == StateAllowed || e.rec.State == StateDenied {
			rec := e.rec
			rec.UIDs = slices.Clone(rec.UIDs)
			recs = append(recs, rec)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(recs, func(a, b Record) int {
		if a.PackageName < b.PackageName {
			return -1
		}
		if a.PackageName > b.PackageName {
			return 1
		}
		return 0
	})
	if err := writeFile(r.dir, recs); err != nil {
		r.log.Error("callers: registry not saved", "err", err)
		r.mu.Lock()
		r.health = "registry file not writable"
		r.mu.Unlock()
		return errors.Join(ErrUnavailable, err)
	}
	return nil
}

// Set is the owner's decision on a package: StateAllowed,
// StateDenied (revoke) or StateRemoved (forget). Denying or removing an
// app closes its channels and cancels its tasks before Set returns.
// Unknown packages are ErrNotFound.
func (r *Registry) Set(ctx context.Context, pkg string, s State) error {
	now := r.clock.Now()
	r.mu.Lock()
	e := r.entries[pkg]
	if e == nil {
		r.mu.Unlock()
		return ErrNotFound
	}
	var revoke []*Channel
	var uids []int
	switch s {
	case StateAllowed:
		r.decideLocked(e, StateAllowed, now)
	case StateDenied:
		revoke = r.takeChannelsLocked(e)
		uids = slices.Clone(e.rec.UIDs)
		r.decideLocked(e, StateDenied, now)
	case StateRemoved:
		revoke = r.takeChannelsLocked(e)
		uids = slices.Clone(e.rec.UIDs)
		r.dropLocked(e)
	default:
		r.mu.Unlock()
		return ErrBadState
	}
	r.mu.Unlock()
	r.log.Info("callers: owner decision", "package", pkg, "state", string(s))
	if s == StateAllowed {
		return r.save()
	}
	// The decision already holds in memory (new opens are refused), so
	// the app's channels and tasks stop while the file is synced rather
	// than after; Set still returns only once both are done.
	saved := make(chan error, 1)
	go func() { saved <- r.save() }()
	r.revoke(ctx, pkg, now, revoke, uids)
	return <-saved
}

// revoke closes channels and cancels the tasks of every uid.
func (r *Registry) revoke(ctx context.Context, pkg string, at time.Time, chs []*Channel, uids []int) {
	start := time.Now() // WaitedMs measures how long stopping took: wall time
	if faultinject.Enabled && faultinject.Active(faultinject.RevokeLeavesConnected) {
		chs = nil // injected fault: the channels stay open
	}
	for _, c := range chs {
		c.close()
	}
	rev := Revocation{PackageName: pkg, At: ms(at), ClosedChannels: len(chs), CancelRequested: []string{}, Owners: []string{}}
	r.mu.Lock()
	canceller := r.canceller
	r.mu.Unlock()
	if faultinject.Enabled && faultinject.Active(faultinject.RevokeKeepsTasks) {
		canceller = nil // injected fault: revocation leaves the tasks running
	}
	if canceller != nil {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, uid := range uids {
			owner := "uid:" + strconv.Itoa(uid)
			rev.Owners = append(rev.Owners, owner)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids, err := canceller.CancelOwner(context.WithoutCancel(ctx), owner, "revoked")
				if err != nil {
					r.log.Warn("callers: revoked tasks still stopping", "package", pkg, "code", string(errcode.CodeOf(err)))
				}
				mu.Lock()
				rev.CancelRequested = append(rev.CancelRequested, ids...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		slices.Sort(rev.CancelRequested)
	}
	rev.WaitedMs = time.Since(start).Milliseconds()
	r.mu.Lock()
	r.revocations = append(r.revocations, rev)
	if len(r.revocations) > maxRevocations {
		r.revocations = r.revocations[len(r.revocations)-maxRevocations:]
	}
	r.mu.Unlock()
	r.log.Info("callers: revoked", "package", pkg, "channels", rev.ClosedChannels, "tasks", len(rev.CancelRequested), "ms", rev.WaitedMs)
}

// Reinstalled tells the registry that the package table now has pkg
// signed with digest (the package table's change feed). When the signer
// changed, the old grant is revoked at once: the app's channels are
// closed, the entry is dropped and the app's next open is a new
// authorization request flagged signatureChanged.
func (r *Registry) Reinstalled(pkg, digest string) {
	r.mu.Lock()
	e := r.entries[pkg]
	if e == nil || e.rec.SigningDigest == digest || faultinject.Enabled && faultinject.Active(faultinject.SignatureKeepsGrant) {
		r.mu.Unlock()
		return
	}
	revoked := r.takeChannelsLocked(e)
	persisted := e.rec.State != StatePending
	r.dropLocked(e)
	r.resigned[pkg] = true
	r.mu.Unlock()
	r.log.Warn("callers: signing digest changed", "package", pkg)
	for _, c := range revoked {
		c.close()
	}
	if persisted {
		r.save()
	}
}

// Answer is the owner's answer to a pending card by request id. It
// reports whether the answer was taken: an unknown or already answered
// request is ignored (false, nil).
func (r *Registry) Answer(requestID string, allow bool) (bool, error) {
	now := r.clock.Now()
	r.mu.Lock()
	var found *entry
	for _, e := range r.entries {
		if e.rec.State == StatePending && e.requestID != "" && e.requestID == requestID {
			found = e
			break
		}
	}
	if found == nil {
		r.mu.Unlock()
		return false, nil
	}
	s := StateDenied
	if allow {
		s = StateAllowed
	}
	r.decideLocked(found, s, now)
	r.mu.Unlock()
	r.log.Info("callers: card answered", "package", found.rec.PackageName, "state", string(s))
	return true, r.save()
}

// Item is one app in the list, keys in the order of spec §5.6.
type Item struct {
	PackageName   string `json:"packageName"`
	Label         string `json:"label"`
	SigningDigest string `json:"signingDigest"`
	State         State  `json:"state"`
	RequestID     string `json:"requestId,omitempty"`
	FirstSeenAt   int64  `json:"firstSeenAt"`
	DecidedAt     int64  `json:"decidedAt,omitempty"`
	LastUsedAt    *int64 `json:"lastUsedAt,omitempty"`
	DeniedUntil   *int64 `json:"deniedUntil,omitempty"`
	RequestedAt   int64  `json:"requestedAt,omitempty"`
	Usage         Usage  `json:"usage"`
}

// Card is a pending authorization as the owner sees it (spec §5.5):
// "Allow «label» to use AgentOS?", with the package in full and the first
// 12 characters of the signing digest.
type Card struct {
	RequestID        string   `json:"requestId"`
	Title            string   `json:"title"`
	Label            string   `json:"label"`
	PackageName      string   `json:"packageName"`
	DigestPrefix     string   `json:"digestPrefix"`
	Explanation      string   `json:"explanation"`
	SignatureChanged bool     `json:"signatureChanged"`
	RequestedAt      int64    `json:"requestedAt"`
	DeadlineMillis   int64    `json:"deadlineMillis"`
	Options          []string `json:"options"`
}

// Snapshot is the registry's state for `callers list`.
type Snapshot struct {
	Callers          []Item          `json:"callers"`
	Cards            []Card          `json:"cards"`
	Health           string          `json:"health"`
	Config           ConfigJSON      `json:"config"`
	SignatureChanged map[string]bool `json:"signatureChanged"`
	Revocations      []Revocation    `json:"revocations"`
	// ThirdPartyChannels counts the open channels of APP callers.
	ThirdPartyChannels int `json:"-"`
}

// ConfigJSON is Config in milliseconds.
type ConfigJSON struct {
	CooldownMs              int64 `json:"cooldownMs"`
	TTLMs                   int64 `json:"ttlMs"`
	AbandonMs               int64 `json:"abandonMs"`
	AbandonCountsAsDenialMs int64 `json:"abandonCountsAsDenialMs"`
	CardTimeoutMs           int64 `json:"cardTimeoutMs"`
	MaxPending              int   `json:"maxPending"`
	MaxEntries              int   `json:"maxEntries"`
}

// List returns every app, sorted by package name, with its usage.
func (r *Registry) List() Snapshot {
	r.mu.Lock()
	cfg := r.cfg
	usage := r.usage
	snap := Snapshot{Health: r.health, SignatureChanged: map[string]bool{}, Revocations: slices.Clone(r.revocations),
		ThirdPartyChannels: r.open, Cards: []Card{}}
	type row struct {
		item Item
		uids []int
	}
	var rows []row
	for _, e := range r.entries {
		it := Item{PackageName: e.rec.PackageName, Label: e.rec.Label, SigningDigest: e.rec.SigningDigest,
			State: e.rec.State, FirstSeenAt: e.rec.FirstSeenAt}
		if e.rec.LastUsedAt != 0 {
			v := e.rec.LastUsedAt
			it.LastUsedAt = &v
		}
		switch e.rec.State {
		case StatePending:
			it.RequestID = e.requestID
			it.RequestedAt = ms(e.requestedAt)
			snap.Cards = append(snap.Cards, Card{
				RequestID: e.requestID, Title: "Allow '" + e.rec.Label + "' to use AgentOS?", Label: e.rec.Label,
				PackageName: e.rec.PackageName, DigestPrefix: e.rec.SigningDigest[:12],
				Explanation:      "This app wants to send requests to your agent; they may use your tools with your consent.",
				SignatureChanged: e.rec.SignatureChanged, RequestedAt: ms(e.requestedAt),
				DeadlineMillis: ms(e.requestedAt.Add(cfg.CardTimeout)), Options: []string{"allow", "deny"},
			})
		case StateAllowed:
			it.DecidedAt = e.rec.DecidedAt
		case StateDenied:
			it.DecidedAt = e.rec.DecidedAt
			v := e.rec.DeniedUntil
			it.DeniedUntil = &v
		}
		it.Usage.ActiveChannels = len(e.channels)
		if e.rec.SignatureChanged {
			snap.SignatureChanged[e.rec.PackageName] = true
		}
		rows = append(rows, row{it, slices.Clone(e.rec.UIDs)})
	}
	r.mu.Unlock()
	snap.Config = ConfigJSON{CooldownMs: cfg.DenyCooldown.Milliseconds(), TTLMs: cfg.PendingTTL.Milliseconds(),
		AbandonMs: cfg.AbandonAfter.Milliseconds(), AbandonCountsAsDenialMs: cfg.AbandonCountsAsDenialAfter.Milliseconds(),
		CardTimeoutMs: cfg.CardTimeout.Milliseconds(), MaxPending: cfg.MaxPending, MaxEntries: cfg.MaxEntries}
	for i := range rows {
		if usage != nil {
			for _, uid := range rows[i].uids {
				total, hour, tasks := usage("uid:" + strconv.Itoa(uid))
				rows[i].item.Usage.PromptsTotal += total
				rows[i].item.Usage.PromptsLastHour += hour
				rows[i].item.Usage.ActiveTasks += tasks
			}
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		switch {
		case a.item.PackageName < b.item.PackageName:
			return -1
		case a.item.PackageName > b.item.PackageName:
			return 1
		}
		return 0
	})
	snap.Callers = make([]Item, len(rows))
	for i, rw := range rows {
		snap.Callers[i] = rw.item
	}
	slices.SortFunc(snap.Cards, func(a, b Card) int { return int(a.RequestedAt - b.RequestedAt) })
	if snap.Revocations == nil {
		snap.Revocations = []Revocation{}
	}
	return snap
}
