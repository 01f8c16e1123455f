package consent

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/ids"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// Coordinator limits (spec §4.6).
const (
	// DefaultMaxPending is how many requests may wait at once; more are
	// denied UNAVAILABLE at once.
	DefaultMaxPending = 16
	// DefaultRecent is how many finished requests Recent keeps.
	DefaultRecent = 50
	// RecentArgsChars is the argument summary of a Recent entry.
	RecentArgsChars = 120
	// decisionsKept bounds the answers Decision remembers.
	decisionsKept = 1024
)

// End says how a request ended (ConsentEnd).
type End string

const (
	EndAnswered  End = "ANSWERED"
	EndTimedOut  End = "TIMED_OUT"
	EndCancelled End = "CANCELLED"
	EndClosed    End = "CLOSED"
)

// DenyReason says why a request was denied.
type DenyReason string

const (
	DenyUser        DenyReason = "USER"
	DenyTimeout     DenyReason = "TIMEOUT"
	DenyUnavailable DenyReason = "UNAVAILABLE"
	// DenyClient: the task was cancelled while the card waited (event
	// reason "client").
	DenyClient DenyReason = "CLIENT"
)

// Outcome is how a request ended.
type Outcome struct {
	RequestID string
	// Choice is the choice in effect: the answer if it was offered, DENY
	// otherwise (and for every end but ANSWERED).
	Choice Choice
	End    End
	// DenyReason is set when Choice is DENY.
	DenyReason DenyReason
	// Auto is the auto-answer mode that answered, if any.
	Auto AutoMode
}

// Allowed reports whether the call may run.
func (o Outcome) Allowed() bool { return o.Choice != Deny && o.Choice != "" }

// Texts the model receives for a denied call (after "[agentos:tool_denied] ").
const (
	TextDeclined    = "The user declined this tool call."
	TextTimedOut    = "The user did not respond to the confirmation in time."
	TextCancelled   = "The task was cancelled before the user answered."
	TextUnavailable = "AgentOS could not ask the user right now; the call was not made."
)

// DenialText is the sentence for a denied outcome.
func (o Outcome) DenialText() string {
	switch o.DenyReason {
	case DenyTimeout:
		return TextTimedOut
	case DenyClient:
		return TextCancelled
	case DenyUnavailable:
		return TextUnavailable
	}
	return TextDeclined
}

// EventReason is the consent.resolved reason: user, timeout,
// unavailable or client.
func (o Outcome) EventReason() string {
	switch o.DenyReason {
	case DenyTimeout:
		return "timeout"
	case DenyUnavailable:
		return "unavailable"
	case DenyClient:
		return "client"
	}
	return "user"
}

// Decision is the short form the owner's tools print: allow,
// allowForSession, allowAlways, deny:user, deny:timeout,
// deny:unavailable, deny:client.
func (o Outcome) Decision() string {
	switch o.Choice {
	case AllowOnce:
		return "allow"
	case AllowForSession:
		return "allowForSession"
	case AlwaysAllow:
		return "allowAlways"
	}
	switch o.DenyReason {
	case DenyTimeout:
		return "deny:timeout"
	case DenyUnavailable:
		return "deny:unavailable"
	case DenyClient:
		return "deny:client"
	}
	return "deny:user"
}

// AutoMode answers requests without the user, for tests and the lab
// (`agentosd ctl consent mode`).
type AutoMode string

const (
	AutoOff AutoMode = "off"
	// AutoAllow picks ALLOW_FOR_SESSION when offered, else ALLOW_ONCE;
	// never ALWAYS_ALLOW.
	AutoAllow     AutoMode = "allow"
	AutoAllowOnce AutoMode = "allowOnce"
	AutoDeny      AutoMode = "deny"
)

// ParseAutoMode reads allow, allowOnce (or allow-once), deny or off.
func ParseAutoMode(s string) (AutoMode, bool) {
	switch s {
	case "off":
		return AutoOff, true
	case "allow":
		return AutoAllow, true
	case "allowOnce", "allow-once":
		return AutoAllowOnce, true
	case "deny":
		return AutoDeny, true
	}
	return "", false
}

func (m AutoMode) choose(options []Choice) Choice {
	switch m {
	case AutoAllow:
		if slices.Contains(options, AllowForSession) {
			return AllowForSession
		}
		return AllowOnce
	case AutoAllowOnce:
		return AllowOnce
	}
	return Deny
}

// Request is one consent request.
type Request struct {
	// ID is the request id; "" means a new req_<ULID>.
	ID                            string
	SessionID, TaskID, ToolCallID string
	Caller                        Initiator
	// ToolName is the final model name; ToolTitle the server's title.
	ToolName, ToolTitle string
	// Source is set for plugin tools, SessionServer for session tools.
	Source        *catalog.ToolID
	SessionServer string
	// ACIApp is set for ACI capabilities (the app's label or package).
	ACIApp    string
	Arguments json.RawMessage
	Risk      catalog.Risk
	// Options are the choices offered (Options()); empty means
	// [ALLOW_ONCE, DENY].
	Options []Choice
	// Timeout counts from creation, queue time included; 0 means the
	// coordinator's default.
	Timeout time.Duration
}

// View is one pending card as the owner's tools show it (spec §5.5).
type View struct {
	RequestID        string       `json:"requestId"`
	ToolDisplayName  string       `json:"toolDisplayName"`
	ToolName         string       `json:"toolName"`
	Risk             catalog.Risk `json:"risk"`
	CallerKind       string       `json:"callerKind"`
	CallerPackage    string       `json:"callerPackage,omitempty"`
	Title            string       `json:"title"`
	InitiatorLine    string       `json:"initiatorLine"`
	SourceLine       string       `json:"sourceLine,omitempty"`
	ArgumentsPreview string       `json:"argumentsPreview"`
	Options          []CardOption `json:"options"`
	RemainingMs      int64        `json:"remainingMs"`
	// Card is the full display model.
	Card Card `json:"card"`
}

// RecentEntry is one finished request (AutoConsentResponder's log).
type RecentEntry struct {
	RequestID    string          `json:"requestId"`
	Tool         string          `json:"tool"`
	Risk         catalog.Risk    `json:"risk"`
	Source       *catalog.ToolID `json:"source,omitempty"`
	Args         string          `json:"args"`
	Options      []Choice        `json:"options"`
	AnsweredWith string          `json:"answeredWith"`
	End          End             `json:"end"`
	Notice       string          `json:"notice,omitempty"`
}

// CoordinatorOptions configure a Coordinator. The zero value works.
type CoordinatorOptions struct {
	// MaxPending; 0 means DefaultMaxPending.
	MaxPending int
	// Timeout is the default per-request timeout; 0 means DefaultTimeout.
	Timeout time.Duration
	// Recent is how many finished requests to keep; 0 means DefaultRecent.
	Recent int
	// Clock times each request and stamps the cards; nil means the real
	// clock.
	Clock clock.Clock
	// OnChange is called (without locks held, in its own goroutine per
	// change, so it may block briefly) when the pending set changes.
	OnChange func()
	// Logger receives ids, risks and ends, never arguments; nil discards.
	Logger *slog.Logger
}

// Coordinator queues consent requests for the user (ConsentCoordinator,
// spec §5.4): FIFO by arrival, answerable by id, each with a timeout
// counted from its creation, at most MaxPending waiting. It is safe for
// concurrent use. Only the owner's admin API calls Respond; nothing an
// app can reach does.
type Coordinator struct {
	o CoordinatorOptions

	mu        sync.Mutex
	pending   []*pendingReq          // in arrival order; guarded by mu
	byID      map[string]*pendingReq // guarded by mu
	decisions map[string]string      // finished ids → Decision(); guarded by mu
	order     []string               // decision ids, oldest first; guarded by mu
	recent    []RecentEntry          // newest last; guarded by mu
	mode      AutoMode               // guarded by mu
	closed    bool                   // guarded by mu
}

type pendingReq struct {
	req     Request
	card    Card
	created time.Time
	timeout time.Duration
	timer   clock.Timer // guarded by Coordinator.mu
	done    chan struct{}
	out     Outcome // set before done closes
	notice  string
}

// NewCoordinator returns an empty coordinator in auto mode off.
func NewCoordinator(opts *CoordinatorOptions) *Coordinator {
	var o CoordinatorOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Recent <= 0 {
		o.Recent = DefaultRecent
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Coordinator{o: o, byID: map[string]*pendingReq{}, decisions: map[string]string{}, mode: AutoOff}
}

// SetMode sets the auto-answer mode for requests created from now on.
func (c *Coordinator) SetMode(m AutoMode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mode = m
}

// Mode returns the auto-answer mode.
func (c *Coordinator) Mode() AutoMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mode
}

// Ask queues r and waits for its end: an answer, the timeout, ctx's end
// (the task was cancelled: the card is withdrawn, DENY with reason
// CLIENT) or Close. A full queue or a repeated id ends it at once with
// DENY UNAVAILABLE. The outcome carries the request id.
func (c *Coordinator) Ask(ctx context.Context, r Request) Outcome {
	p, out, ok := c.enqueue(r)
	if !ok {
		return out
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		c.finish(p, Outcome{Choice: Deny, End: EndCancelled, DenyReason: DenyClient})
		<-p.done
	}
	return p.out
}

// Post queues r without waiting and returns its id; its end is read with
// Decision. It is Ask for requests nobody waits on (`consent inject`).
func (c *Coordinator) Post(r Request) (string, Outcome, bool) {
	p, out, ok := c.enqueue(r)
	if !ok {
		return out.RequestID, out, false
	}
	return p.req.ID, Outcome{RequestID: p.req.ID}, true
}

func (c *Coordinator) enqueue(r Request) (*pendingReq, Outcome, bool) {
	if r.ID == "" {
		r.ID = ids.New(ids.Request)
	}
	if len(r.Options) == 0 {
		r.Options = []Choice{AllowOnce, Deny}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = c.o.Timeout
	}
	// Never shown: ended like a card of a closed coordinator.
	unavailable := Outcome{RequestID: r.ID, Choice: Deny, End: EndClosed, DenyReason: DenyUnavailable}

	c.mu.Lock()
	if _, dup := c.byID[r.ID]; dup || c.closed {
		c.mu.Unlock()
		c.o.Logger.Warn("consent: request refused", "request", r.ID, "duplicate", dup)
		return nil, unavailable, false
	}
	if _, seen := c.decisions[r.ID]; seen {
		c.mu.Unlock()
		return nil, unavailable, false
	}
	if len(c.pending) >= c.o.MaxPending {
		c.rememberLocked(r.ID, unavailable.Decision())
		c.recordLocked(r, unavailable, "", "")
		c.mu.Unlock()
		c.o.Logger.Warn("consent: too many pending requests", "request", r.ID)
		return nil, unavailable, false
	}
	now := c.o.Clock.Now()
	p := &pendingReq{req: r, created: now, timeout: timeout, done: make(chan struct{})}
	p.card = BuildCard(CardRequest{
		RequestID: r.ID, SessionID: r.SessionID, TaskID: r.TaskID, Caller: r.Caller,
		ToolName: r.ToolName, ToolTitle: r.ToolTitle, Source: r.Source, SessionServer: r.SessionServer, ACIApp: r.ACIApp,
		Arguments: r.Arguments, Risk: r.Risk, Options: r.Options, CreatedAt: now, Timeout: timeout,
	})
	c.pending = append(c.pending, p)
	c.byID[r.ID] = p
	mode := c.mode
	auto := mode != AutoOff && mode != ""
	if !auto {
		p.timer = c.o.Clock.AfterFunc(timeout, func() {
			if faultinject.Enabled && faultinject.Active(faultinject.ConsentTimeoutAllows) {
				c.finish(p, Outcome{Choice: AllowOnce, End: EndTimedOut}) // injected fault
			}
			c.finish(p, Outcome{Choice: Deny, End: EndTimedOut, DenyReason: DenyTimeout})
		})
	}
	c.mu.Unlock()

	c.o.Logger.Info("consent: requested", "request", r.ID, "risk", r.Risk.String())
	if auto {
		choice := mode.choose(r.Options)
		out := Outcome{Choice: Resolve(r.Options, choice), End: EndAnswered, Auto: mode}
		if out.Choice == Deny {
			out.DenyReason = DenyUser
		}
		c.finish(p, out)
		return p, Outcome{}, true
	}
	c.changed()
	return p, Outcome{}, true
}

// finish ends p with out unless it already ended.
func (c *Coordinator) finish(p *pendingReq, out Outcome) bool {
	out.RequestID = p.req.ID
	c.mu.Lock()
	if c.byID[p.req.ID] != p {
		c.mu.Unlock()
		return false
	}
	delete(c.byID, p.req.ID)
	if i := slices.Index(c.pending, p); i >= 0 {
		c.pending = slices.Delete(c.pending, i, i+1)
	}
	p.out = out
	c.rememberLocked(p.req.ID, out.Decision())
	answered := string(out.Choice)
	if out.Auto != "" {
		answered = "auto:" + string(out.Choice)
	} else if out.End != EndAnswered {
		answered = ""
	}
	c.recordLocked(p.req, out, answered, "")
	timer := p.timer
	c.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	close(p.done)
	c.o.Logger.Info("consent: resolved", "request", p.req.ID, "decision", out.Decision(), "end", string(out.End))
	c.changed()
	return true
}

func (c *Coordinator) changed() {
	if c.o.OnChange != nil {
		go c.o.OnChange()
	}
}

func (c *Coordinator) rememberLocked(id, decision string) {
	if _, ok := c.decisions[id]; !ok {
		c.order = append(c.order, id)
	}
	c.decisions[id] = decision
	for len(c.order) > decisionsKept {
		delete(c.decisions, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *Coordinator) recordLocked(r Request, out Outcome, answered, notice string) {
	args, _ := ArgumentsPreview(r.Arguments)
	e := RecentEntry{
		RequestID:    r.ID,
		Tool:         r.ToolName,
		Risk:         r.Risk,
		Source:       r.Source,
		Args:         chars.Cut(args, RecentArgsChars),
		Options:      slices.Clone(r.Options),
		AnsweredWith: answered,
		End:          out.End,
		Notice:       notice,
	}
	c.recent = append(c.recent, e)
	if n := len(c.recent) - c.o.Recent; n > 0 {
		c.recent = slices.Delete(c.recent, 0, n)
	}
}

// Respond answers a pending request by id. A choice the card did not
// offer counts as DENY. It returns false for an unknown, answered or
// timed-out id.
func (c *Coordinator) Respond(id string, choice Choice) bool {
	c.mu.Lock()
	p, ok := c.byID[id]
	c.mu.Unlock()
	if !ok {
		return false
	}
	eff := Resolve(p.req.Options, choice)
	out := Outcome{Choice: eff, End: EndAnswered}
	if eff == Deny {
		out.DenyReason = DenyUser
	}
	return c.finish(p, out)
}

// SetNotice attaches a notice to a finished request's Recent entry (the
// "always allow" write-back that failed).
func (c *Coordinator) SetNotice(id, notice string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.recent) - 1; i >= 0; i-- {
		if c.recent[i].RequestID == id {
			c.recent[i].Notice = notice
			return
		}
	}
}

// Decision returns "pending" for a waiting request, its Decision() for
// a finished one (the last 1,024), and "unknown" otherwise.
func (c *Coordinator) Decision(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[id]; ok {
		return "pending"
	}
	if d, ok := c.decisions[id]; ok {
		return d
	}
	return "unknown"
}

// Pending returns the waiting cards in arrival order.
func (c *Coordinator) Pending() []View {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.o.Clock.Now()
	out := make([]View, 0, len(c.pending))
	for i, p := range c.pending {
		card := p.card
		card.QueuePosition, card.QueueSize = i, len(c.pending)
		remaining := p.created.Add(p.timeout).Sub(now).Milliseconds()
		out = append(out, View{
			RequestID:        card.RequestID,
			ToolDisplayName:  card.ToolDisplayName,
			ToolName:         card.ToolName,
			Risk:             card.Risk,
			CallerKind:       card.Caller.Kind,
			CallerPackage:    card.Caller.PackageName,
			Title:            card.Title,
			InitiatorLine:    card.InitiatorLine,
			SourceLine:       card.SourceLine,
			ArgumentsPreview: card.ArgumentsPreview,
			Options:          card.Options,
			RemainingMs:      max(remaining, 0),
			Card:             card,
		})
	}
	return out
}

// Recent returns the last finished requests, oldest first.
func (c *Coordinator) Recent() []RecentEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recent)
}

// Close denies every pending request (END CLOSED, UNAVAILABLE) and
// refuses new ones.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	ps := slices.Clone(c.pending)
	c.mu.Unlock()
	for _, p := range ps {
		c.finish(p, Outcome{Choice: Deny, End: EndClosed, DenyReason: DenyUnavailable})
	}
}

// SessionMemory is "don't ask again in this conversation"
// (ALLOW_FOR_SESSION): per session, the final tool names the user
// allowed. It lives in memory only and is forgotten when the session
// closes. Safe for concurrent use.
type SessionMemory struct {
	mu sync.Mutex
	m  map[string]map[string]bool // session → tool names; guarded by mu
}

// Remember records that tool may run without asking in session.
func (s *SessionMemory) Remember(session, tool string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string]bool{}
	}
	if s.m[session] == nil {
		s.m[session] = map[string]bool{}
	}
	s.m[session][tool] = true
}

// Remembered reports whether tool was allowed for session.
func (s *SessionMemory) Remembered(session, tool string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[session][tool]
}

// Forget drops a session's memory.
func (s *SessionMemory) Forget(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, session)
}
