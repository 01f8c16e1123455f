package callerchan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/internal/table"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// AdminMethods are the callers.* admin methods (the owner's "authorized
// apps" settings and the authorization cards) over reg; srv, when not
// nil, adds its channel counts to callers.list.
func AdminMethods(reg *callers.Registry, srv *Server) []admin.Method {
	a := adminBackend{reg, srv}
	return []admin.Method{
		{Name: "callers.allow", Perm: admin.Owner, Summary: "allow a caller app", Handle: a.setState(callers.StateAllowed)},
		{Name: "callers.answer", Perm: admin.Owner, Summary: "answer a pending authorization card", Handle: a.answer},
		{Name: "callers.config", Perm: admin.Owner, Summary: "set authorization timings (tests); no fields = defaults", Handle: a.config},
		{Name: "callers.deny", Perm: admin.Owner, Summary: "deny (revoke) a caller app", Handle: a.setState(callers.StateDenied)},
		{Name: "callers.list", Perm: admin.Owner, Summary: "list caller apps, cards, channels and revocations", Handle: a.list},
		{Name: "callers.remove", Perm: admin.Owner, Summary: "forget a caller app (it is asked again)", Handle: a.setState(callers.StateRemoved)},
		{Name: "callers.revoke", Perm: admin.Owner, Summary: "revoke a caller app (= deny)", Handle: a.setState(callers.StateDenied)},
	}
}

// StatusSection is the "callers" section of `agentosd ctl status`.
func StatusSection(reg *callers.Registry, srv *Server) admin.StatusSection {
	return admin.StatusSection{Name: "callers", Read: func(context.Context) (any, error) {
		snap := reg.List()
		return map[string]any{"channels": srv.Stats(), "remembered": len(snap.Callers), "waiting": len(snap.Cards), "health": snap.Health}, nil
	}}
}

type adminBackend struct {
	reg *callers.Registry
	srv *Server
}

// CtlVerbs are the `agentosd ctl callers …` verbs.
func CtlVerbs() []admin.Verb {
	return []admin.Verb{
		{Group: "callers", Name: "list", Method: "callers.list", Summary: "list caller apps and pending cards", Text: printCallers},
		{Group: "callers", Name: "allow", Method: "callers.allow", Args: "PACKAGE", Summary: "allow a caller app", Params: packageParams, Text: printState},
		{Group: "callers", Name: "deny", Method: "callers.deny", Args: "PACKAGE", Summary: "deny a caller app (closes its channels, cancels its tasks)", Params: packageParams, Text: printState},
		{Group: "callers", Name: "revoke", Method: "callers.revoke", Args: "PACKAGE", Summary: "revoke a caller app (= deny)", Params: packageParams, Text: printState},
		{Group: "callers", Name: "remove", Method: "callers.remove", Args: "PACKAGE", Summary: "forget a caller app", Params: packageParams, Text: printState},
		{Group: "callers", Name: "answer", Method: "callers.answer", Args: "REQUEST_ID allow|deny", Summary: "answer an authorization card", Params: answerParams, Text: printAnswer},
		{Group: "callers", Name: "config", Method: "callers.config", Args: "[--cooldown D] [--ttl D] [--abandon D]", Summary: "set authorization timings (tests)", Params: configParams},
	}
}

// ListResult is the result of callers.list.
type ListResult struct {
	Callers          []callers.Item       `json:"callers"`
	Cards            []callers.Card       `json:"cards"`
	Health           string               `json:"health"`
	Config           callers.ConfigJSON   `json:"config"`
	Channels         Stats                `json:"channels"`
	SignatureChanged map[string]bool      `json:"signatureChanged"`
	Revocations      []callers.Revocation `json:"revocations"`
}

// notFound is spec §3.6's agentos.acp.not_found for an unknown package or
// request.
func notFound(what string) *errcode.Error {
	return errcode.New(errcode.InvalidParams, "agentos.acp.not_found: "+what).WithDetails(map[string]any{"reason": "not_found"})
}

func (a adminBackend) list(_ context.Context, c *admin.Call) (any, error) {
	if err := c.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	snap := a.reg.List()
	res := ListResult{Callers: snap.Callers, Cards: snap.Cards, Health: snap.Health, Config: snap.Config,
		SignatureChanged: snap.SignatureChanged, Revocations: snap.Revocations,
		Channels: Stats{ThirdParty: snap.ThirdPartyChannels, Open: snap.ThirdPartyChannels}}
	if a.srv != nil {
		res.Channels = a.srv.Stats()
	}
	if res.Callers == nil {
		res.Callers = []callers.Item{}
	}
	return res, nil
}

type packageArg struct {
	Package string `json:"package"`
}

// StateResult is the result of allow/deny/revoke/remove.
type StateResult struct {
	Package string        `json:"package"`
	State   callers.State `json:"state"`
}

func (a adminBackend) setState(s callers.State) admin.Handler {
	return func(ctx context.Context, c *admin.Call) (any, error) {
		var p packageArg
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		if p.Package == "" {
			return nil, errcode.New(errcode.InvalidParams, `"package" is required`)
		}
		switch err := a.reg.Set(ctx, p.Package, s); {
		case errors.Is(err, callers.ErrNotFound):
			return nil, notFound("no caller app " + p.Package)
		case errors.Is(err, callers.ErrUnavailable):
			return nil, errcode.Wrap(errcode.StoreFailed, "agentos.acp.registry_unavailable: the registry could not be saved", err)
		case err != nil:
			return nil, err
		}
		return StateResult{Package: p.Package, State: s}, nil
	}
}

type answerArg struct {
	RequestID string `json:"requestId"`
	Allow     *bool  `json:"allow"`
}

// AnswerResult is the result of callers.answer: accepted is false when the
// request was unknown or already answered (the answer is ignored).
type AnswerResult struct {
	Accepted bool `json:"accepted"`
}

func (a adminBackend) answer(_ context.Context, c *admin.Call) (any, error) {
	var p answerArg
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.RequestID == "" || p.Allow == nil {
		return nil, errcode.New(errcode.InvalidParams, `"requestId" and "allow" are required`)
	}
	ok, err := a.reg.Answer(p.RequestID, *p.Allow)
	if err != nil && !ok {
		return nil, err
	}
	return AnswerResult{Accepted: ok}, nil
}

type configArg struct {
	CooldownMs *int64 `json:"cooldownMs"`
	TTLMs      *int64 `json:"ttlMs"`
	AbandonMs  *int64 `json:"abandonMs"`
}

func (a adminBackend) config(_ context.Context, c *admin.Call) (any, error) {
	var p configArg
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	cfg := callers.Config{}
	ms := func(v *int64, d *time.Duration, name string) error {
		if v == nil {
			return nil
		}
		if *v <= 0 || *v > int64(24*time.Hour/time.Millisecond) {
			return errcode.Newf(errcode.InvalidParams, "%q must be between 1 and 86400000", name)
		}
		*d = time.Duration(*v) * time.Millisecond
		return nil
	}
	for _, f := range []error{ms(p.CooldownMs, &cfg.DenyCooldown, "cooldownMs"), ms(p.TTLMs, &cfg.PendingTTL, "ttlMs"),
		ms(p.AbandonMs, &cfg.AbandonAfter, "abandonMs")} {
		if f != nil {
			return nil, f
		}
	}
	a.reg.SetConfig(cfg)
	return a.reg.List().Config, nil
}

func packageParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return nil, admin.Usagef("want exactly one PACKAGE")
	}
	return packageArg{Package: args[0]}, nil
}

func answerParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 2 || (args[1] != "allow" && args[1] != "deny") {
		return nil, admin.Usagef("want REQUEST_ID allow|deny")
	}
	allow := args[1] == "allow"
	return answerArg{RequestID: args[0], Allow: &allow}, nil
}

func configParams(args []string, _ io.Reader) (any, error) {
	var p configArg
	for i := 0; i < len(args); i++ {
		var dst **int64
		switch args[i] {
		case "--cooldown":
			dst = &p.CooldownMs
		case "--ttl":
			dst = &p.TTLMs
		case "--abandon":
			dst = &p.AbandonMs
		default:
			return nil, admin.Usagef("unknown flag %q", args[i])
		}
		if i+1 >= len(args) {
			return nil, admin.Usagef("%s needs a duration", args[i])
		}
		d, err := time.ParseDuration(args[i+1])
		if err != nil || d <= 0 {
			return nil, admin.Usagef("%s: bad duration %q", args[i], args[i+1])
		}
		v := d.Milliseconds()
		*dst = &v
		i++
	}
	return p, nil
}

func printCallers(w io.Writer, raw json.RawMessage) error {
	var r ListResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	var rows [][]string
	for _, it := range r.Callers {
		state := string(it.State)
		if it.DeniedUntil != nil {
			state += " until " + time.UnixMilli(*it.DeniedUntil).Format(time.RFC3339)
		}
		rows = append(rows, []string{it.PackageName, it.Label, state, it.SigningDigest[:12],
			fmt.Sprint(it.Usage.PromptsTotal), fmt.Sprint(it.Usage.ActiveChannels), fmt.Sprint(it.Usage.ActiveTasks)})
	}
	if err := table.Write(w, []string{"package", "label", "state", "digest", "prompts", "channels", "tasks"}, rows); err != nil {
		return err
	}
	for _, c := range r.Cards {
		changed := ""
		if c.SignatureChanged {
			changed = " (its signature changed)"
		}
		fmt.Fprintf(w, "\nWaiting: %s%s\n  package %s, signer %s…\n  answer: agentosd ctl callers answer %s allow|deny\n",
			c.Title, changed, c.PackageName, c.DigestPrefix, c.RequestID)
	}
	fmt.Fprintf(w, "\nchannels: %d open (%d third-party); registry: %s\n", r.Channels.Open, r.Channels.ThirdParty, r.Health)
	return nil
}

func printState(w io.Writer, raw json.RawMessage) error {
	var r StateResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s: %s\n", r.Package, r.State)
	return err
}

func printAnswer(w io.Writer, raw json.RawMessage) error {
	var r AnswerResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if r.Accepted {
		_, err := fmt.Fprintln(w, "accepted")
		return err
	}
	_, err := fmt.Fprintln(w, "ignored (unknown or already answered)")
	return err
}
