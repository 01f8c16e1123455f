package steps

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/lab/consoleui"
	"github.com/agentoslab/agentlab/lab/scenario"
)

// Card is one consent card the lab saw during an attempt, with how it
// was answered. It is what `of: cards` checks and what the attempt's
// consent-cards artifact holds.
type Card struct {
	// Index is the card's 1-based position in the order the lab saw them.
	Index            int       `json:"index"`
	RequestID        string    `json:"requestId"`
	ToolName         string    `json:"toolName"`
	ToolDisplayName  string    `json:"toolDisplayName"`
	Risk             string    `json:"risk"`
	CallerKind       string    `json:"callerKind"`
	CallerPackage    string    `json:"callerPackage,omitempty"`
	Title            string    `json:"title"`
	InitiatorLine    string    `json:"initiatorLine"`
	SourceLine       string    `json:"sourceLine,omitempty"`
	ArgumentsPreview string    `json:"argumentsPreview"`
	Options          []string  `json:"options"`
	SeenAt           time.Time `json:"seenAt"`
	// AnsweredWith is the choice the lab sent ("" when it left the card
	// alone); Accepted says whether the runtime took it.
	AnsweredWith string `json:"answeredWith,omitempty"`
	AnsweredBy   string `json:"answeredBy,omitempty"`
	// Via is how the answer was given: admin (ctl) or ui (the owner's
	// console, tapped in a browser).
	Via      string `json:"via,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
	// Pending says whether the card was pending at the last look.
	Pending bool `json:"pending"`
}

// view is one entry of `consent pending` (the runtime's ConsentView).
type view struct {
	RequestID        string `json:"requestId"`
	ToolDisplayName  string `json:"toolDisplayName"`
	ToolName         string `json:"toolName"`
	Risk             string `json:"risk"`
	CallerKind       string `json:"callerKind"`
	CallerPackage    string `json:"callerPackage"`
	Title            string `json:"title"`
	InitiatorLine    string `json:"initiatorLine"`
	SourceLine       string `json:"sourceLine"`
	ArgumentsPreview string `json:"argumentsPreview"`
	Options          []struct {
		Choice string `json:"choice"`
	} `json:"options"`
}

// recentEntry is one entry of `consent recent`.
type recentEntry struct {
	RequestID    string `json:"requestId"`
	Tool         string `json:"tool"`
	Risk         string `json:"risk"`
	AnsweredWith string `json:"answeredWith"`
	End          string `json:"end"`
}

type rule struct {
	index       int
	tool, calls *regexp.Regexp
	risk        string
	choice      string
}

// recorder watches one device's pending consent cards, records every
// card and, when driving, answers each by the scenario's rules: the
// consent driver.
type recorder struct {
	t *Target
	// ui, when set, answers through the owner's console (the ui driver)
	// instead of ctl.
	ui func(ctx context.Context, id, choice string) (bool, error)

	pollMu sync.Mutex // one poll at a time

	// mu guards the fields that follow.
	mu       sync.Mutex
	cards    []*Card
	byID     map[string]*Card
	rules    []rule
	def      string
	driving  bool
	interval time.Duration
	baseline map[string]bool
	started  bool
	cancel   context.CancelFunc
	done     chan struct{}
}

func (a *attempt) recorderOf(_ context.Context, t *Target) *recorder {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.consent[t.Role]
	if r == nil {
		r = &recorder{t: t, byID: map[string]*Card{}, interval: DefaultPollInterval}
		if a.consentDriver() == scenario.DriverUI {
			r.ui = func(ctx context.Context, id, choice string) (bool, error) {
				return a.tapUI(ctx, t, consoleui.KindConsent, id, choice)
			}
		}
		a.consent[t.Role] = r
	}
	return r
}

// start notes the runtime's recent answers (so later ones can be told
// apart) and starts watching.
// The watching loop runs under loopCtx (the attempt's), the calls of
// start under ctx.
func (r *recorder) start(ctx, loopCtx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return nil
	}
	r.started = true
	r.mu.Unlock()
	var recent []recentEntry
	if err := r.t.Ctl.Call(ctx, &recent, "consent", "recent"); err != nil {
		return fmt.Errorf("consent recent: %w", err)
	}
	base := map[string]bool{}
	for _, e := range recent {
		base[e.RequestID] = true
	}
	lctx, cancel := context.WithCancel(loopCtx)
	r.mu.Lock()
	r.baseline, r.cancel, r.done = base, cancel, make(chan struct{})
	r.mu.Unlock()
	go r.loop(lctx)
	return nil
}

func (r *recorder) loop(ctx context.Context) {
	defer close(r.done)
	for {
		if err := r.poll(ctx); err != nil && (IsLabFault(err) || ctx.Err() != nil) {
			return
		}
		r.mu.Lock()
		d := r.interval
		r.mu.Unlock()
		if sleep(ctx, d) != nil {
			return
		}
	}
}

// stop ends the watching loop and waits for it.
func (r *recorder) stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// drive makes the recorder answer cards by rules.
func (r *recorder) drive(c *scenario.ConsentStep) {
	var rules []rule
	for _, x := range c.Rules {
		ru := rule{index: x.Index, risk: strings.ToLower(x.Risk), choice: x.Choice}
		if x.Tool != "" {
			ru.tool = regexp.MustCompile(x.Tool) // validated by the scenario package
		}
		if x.Caller != "" {
			ru.calls = regexp.MustCompile(x.Caller)
		}
		rules = append(rules, ru)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rules, r.def, r.driving = rules, c.Default, true
	if r.def == "" {
		r.def = scenario.ChoiceNone
	}
	if c.Interval > 0 {
		r.interval = c.Interval.D()
	}
}

func (r *recorder) stopDriving() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.driving = false
}

// decide returns the choice for a card (ChoiceNone: leave it).
func (r *recorder) decide(c *Card) string {
	for _, ru := range r.rules {
		if ru.index > 0 && ru.index != c.Index {
			continue
		}
		if ru.tool != nil && !ru.tool.MatchString(c.ToolName) && !ru.tool.MatchString(c.ToolDisplayName) {
			continue
		}
		if ru.risk != "" && !strings.EqualFold(ru.risk, c.Risk) {
			continue
		}
		if ru.calls != nil && !ru.calls.MatchString(c.CallerPackage) {
			continue
		}
		return ru.choice
	}
	return r.def
}

// poll reads the pending cards, records new ones and, when driving,
// answers those not answered yet.
func (r *recorder) poll(ctx context.Context) error {
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	var pending []view
	if err := r.t.Ctl.Call(ctx, &pending, "consent", "pending"); err != nil {
		return err
	}
	now := time.Now()
	type answer struct {
		c      *Card
		choice string
	}
	var answers []answer
	r.mu.Lock()
	current := map[string]bool{}
	for _, v := range pending {
		current[v.RequestID] = true
		c := r.byID[v.RequestID]
		if c == nil {
			c = &Card{Index: len(r.cards) + 1, RequestID: v.RequestID, ToolName: v.ToolName, ToolDisplayName: v.ToolDisplayName,
				Risk: v.Risk, CallerKind: v.CallerKind, CallerPackage: v.CallerPackage, Title: v.Title,
				InitiatorLine: v.InitiatorLine, SourceLine: v.SourceLine, ArgumentsPreview: v.ArgumentsPreview, SeenAt: now}
			for _, o := range v.Options {
				c.Options = append(c.Options, o.Choice)
			}
			r.cards = append(r.cards, c)
			r.byID[c.RequestID] = c
		}
		if r.driving && c.AnsweredWith == "" {
			if ch := r.decide(c); ch != scenario.ChoiceNone {
				c.AnsweredWith, c.AnsweredBy = ch, "driver"
				answers = append(answers, answer{c, ch})
			}
		}
	}
	for _, c := range r.cards {
		c.Pending = current[c.RequestID]
	}
	r.mu.Unlock()
	for _, x := range answers {
		accepted, err := r.respond(ctx, x.c.RequestID, x.choice)
		if err != nil {
			return err
		}
		r.mu.Lock()
		x.c.Accepted = accepted
		r.mu.Unlock()
	}
	return nil
}

func (r *recorder) respond(ctx context.Context, id, choice string) (bool, error) {
	r.mu.Lock()
	if c := r.byID[id]; c != nil {
		c.Via = scenario.DriverAdmin
		if r.ui != nil {
			c.Via = scenario.DriverUI
		}
	}
	r.mu.Unlock()
	if r.ui != nil {
		return r.ui(ctx, id, choice)
	}
	var res struct {
		Accepted bool `json:"accepted"`
	}
	if err := r.t.Ctl.Call(ctx, &res, "consent", "respond", id, choice); err != nil {
		return false, fmt.Errorf("consent respond: %w", err)
	}
	return res.Accepted, nil
}

// tap waits for the n-th card and answers it.
func (r *recorder) tap(ctx context.Context, n int, choice string) (any, error) {
	for {
		if err := r.poll(ctx); err != nil {
			return nil, err
		}
		r.mu.Lock()
		var c *Card
		if len(r.cards) >= n {
			c = r.cards[n-1]
		}
		var state string
		switch {
		case c == nil:
		case c.AnsweredWith != "":
			state = "answered"
		case !c.Pending:
			state = "gone"
		default:
			c.AnsweredWith, c.AnsweredBy = choice, "tap"
		}
		r.mu.Unlock()
		switch {
		case c == nil:
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return nil, fmt.Errorf("tap: card %d never came (saw %d): %w", n, r.count(), err)
			}
			continue
		case state == "answered":
			return nil, fmt.Errorf("tap: card %d (%s) was already answered with %s", n, c.ToolDisplayName, c.AnsweredWith)
		case state == "gone":
			return nil, fmt.Errorf("tap: card %d (%s) ended before the tap", n, c.ToolDisplayName)
		}
		accepted, err := r.respond(ctx, c.RequestID, choice)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		c.Accepted = accepted
		r.mu.Unlock()
		return map[string]any{"requestId": c.RequestID, "toolName": c.ToolName, "choice": choice, "accepted": accepted}, nil
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cards)
}

// snapshot copies the cards seen so far.
func (r *recorder) snapshot() []Card {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Card, len(r.cards))
	for i, c := range r.cards {
		out[i] = *c
	}
	return out
}

func (r *recorder) cardsJSON() any { return scenario.ToJSON(r.snapshot()) }

// recentSince returns the runtime's recent answers made since start.
func (r *recorder) recentSince(ctx context.Context) ([]recentEntry, error) {
	var recent []recentEntry
	if err := r.t.Ctl.Call(ctx, &recent, "consent", "recent"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recentEntry
	for _, e := range recent {
		if !r.baseline[e.RequestID] {
			out = append(out, e)
		}
	}
	return out, nil
}

// ctlModes maps the scenario's consent modes to ctl's.
var ctlModes = map[string]string{
	scenario.ConsentAllow:     "allow",
	scenario.ConsentAllowOnce: "allow-once",
	scenario.ConsentDeny:      "deny",
	scenario.ConsentOff:       "off",
	scenario.ConsentAsk:       "off",
}

func (a *attempt) consentStep(ctx context.Context, t *Target, c *scenario.ConsentStep) error {
	r := a.recorderOf(ctx, t)
	if c.Stop {
		r.stopDriving()
		return nil
	}
	driver := c.Rules != nil || c.Default != "" || c.Mode == scenario.ConsentAsk
	mode := ctlModes[c.Mode]
	if driver {
		mode = "off"
	}
	if err := t.Ctl.Call(ctx, nil, "consent", "mode", mode); err != nil {
		return err
	}
	if !driver {
		r.stopDriving()
		return nil
	}
	r.drive(c)
	return r.start(ctx, a.ctx)
}
