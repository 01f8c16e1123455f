package runtimectl

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// ModelConfig is what `model set` configures. The key travels apart.
type ModelConfig struct {
	// Provider is openai, anthropic or scripted.
	Provider string
	BaseURL  string
	Model    string
	Choices  []string
	// Script is a script file on the device (scripted provider).
	Script string
}

// ModelInfo is `model show`: never the key.
type ModelInfo struct {
	Configured bool     `json:"configured"`
	Provider   string   `json:"provider,omitempty"`
	BaseURL    string   `json:"baseUrl,omitempty"`
	Model      string   `json:"model,omitempty"`
	Choices    []string `json:"choices,omitempty"`
	Script     string   `json:"script,omitempty"`
	KeySet     bool     `json:"keySet"`
	Usable     bool     `json:"usable"`
	Problem    string   `json:"problem,omitempty"`
}

// Matches reports whether the runtime is configured as c says.
func (m *ModelInfo) Matches(c ModelConfig) bool {
	return m.Configured && m.Provider == c.Provider && m.BaseURL == c.BaseURL && m.Model == c.Model &&
		strings.Join(m.Choices, ",") == strings.Join(c.Choices, ",") && m.Script == c.Script
}

// ModelShow returns the runtime's model configuration.
func (c *Client) ModelShow(ctx context.Context) (*ModelInfo, error) {
	var out ModelInfo
	if err := c.Call(ctx, &out, "model", "show"); err != nil {
		return nil, err
	}
	return &out, nil
}

// ModelSet configures the model. A non-empty key is handed to ctl's
// stdin (--key-stdin), never on a command line; an empty key keeps the
// stored one.
func (c *Client) ModelSet(ctx context.Context, cfg ModelConfig, key string) (*ModelInfo, error) {
	args := []string{"model", "set", "--provider", cfg.Provider}
	if cfg.BaseURL != "" {
		args = append(args, "--base-url", cfg.BaseURL)
	}
	if cfg.Model != "" {
		args = append(args, "--model", cfg.Model)
	}
	if len(cfg.Choices) > 0 {
		args = append(args, "--choices", strings.Join(cfg.Choices, ","))
	}
	if cfg.Script != "" {
		args = append(args, "--script", cfg.Script)
	}
	var out ModelInfo
	var err error
	if key != "" {
		err = c.callWithSecret(ctx, []byte(key), &out, append(args, "--key-stdin")...)
	} else {
		err = c.Call(ctx, &out, args...)
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ModelClear removes the model configuration and key.
func (c *Client) ModelClear(ctx context.Context) (*ModelInfo, error) {
	var out ModelInfo
	if err := c.Call(ctx, &out, "model", "clear"); err != nil {
		return nil, err
	}
	return &out, nil
}

// Plugin is one entry of `plugins list` (the fields the lab uses; Raw
// has the rest).
type Plugin struct {
	ID      string `json:"id"`
	Package string `json:"package"`
	Name    string `json:"name,omitempty"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Enabled bool   `json:"enabled"`
	Builtin bool   `json:"builtin"`

	Raw json.RawMessage `json:"-"`
}

// PluginsList lists the installed plugins.
func (c *Client) PluginsList(ctx context.Context) ([]Plugin, error) {
	var raw []json.RawMessage
	if err := c.Call(ctx, &raw, "plugins", "list"); err != nil {
		return nil, err
	}
	out := make([]Plugin, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, err
		}
		out[i].Raw = r
	}
	return out, nil
}

// PluginsEnable enables a plugin by id.
func (c *Client) PluginsEnable(ctx context.Context, id string) error {
	return c.Call(ctx, nil, "plugins", "enable", id)
}

// PluginsDisable disables a plugin by id.
func (c *Client) PluginsDisable(ctx context.Context, id string) error {
	return c.Call(ctx, nil, "plugins", "disable", id)
}

// PluginsRescan reads the installed plugins again.
func (c *Client) PluginsRescan(ctx context.Context) error {
	return c.Call(ctx, nil, "plugins", "rescan")
}

// PluginsConfirm accepts a plugin's new signer.
func (c *Client) PluginsConfirm(ctx context.Context, id string) error {
	return c.Call(ctx, nil, "plugins", "confirm", id)
}

// PluginsApproval sets always|ask|clear at plugin, server or tool level
// (server and tool may be empty).
func (c *Client) PluginsApproval(ctx context.Context, plugin, server, tool, mode string) error {
	args := []string{"plugins", "approval", plugin}
	if server != "" {
		args = append(args, server)
		if tool != "" {
			args = append(args, tool)
		}
	}
	return c.Call(ctx, nil, append(args, mode)...)
}

// PluginsToolApproval sets always|ask of a tool by final name.
func (c *Client) PluginsToolApproval(ctx context.Context, name, mode string) error {
	return c.Call(ctx, nil, "plugins", "tool-approval", name, mode)
}

// PluginsToolEnable and PluginsToolDisable turn a tool on or off by final
// name.
func (c *Client) PluginsToolEnable(ctx context.Context, name string) error {
	return c.Call(ctx, nil, "plugins", "tool-enable", name)
}

func (c *Client) PluginsToolDisable(ctx context.Context, name string) error {
	return c.Call(ctx, nil, "plugins", "tool-disable", name)
}

// PluginsPolicy returns the approval policy and its health; reset
// resets it first.
func (c *Client) PluginsPolicy(ctx context.Context, reset bool) (json.RawMessage, error) {
	args := []string{"plugins", "policy"}
	if reset {
		args = append(args, "reset")
	}
	var out json.RawMessage
	return out, c.Call(ctx, &out, args...)
}

// CatalogTool is one tool of the catalog.
type CatalogTool struct {
	Name     string `json:"name"`
	Risk     string `json:"risk"`
	Enabled  bool   `json:"enabled"`
	Approval string `json:"approval"`
	Source   any    `json:"source"`
}

// Catalog is the tool catalog as the runtime sees it.
type Catalog struct {
	Tools []CatalogTool `json:"tools"`
	// Met answers a wait: nil without one.
	Met *bool           `json:"met,omitempty"`
	Raw json.RawMessage `json:"-"`
}

// Catalog returns the tool catalog.
func (c *Client) Catalog(ctx context.Context) (*Catalog, error) {
	return c.catalog(ctx, "catalog")
}

// CatalogWait waits (up to timeout) until the tool with this final name
// is in the catalog, or, with absent, gone from it; Met says whether it
// happened.
func (c *Client) CatalogWait(ctx context.Context, name string, absent bool, timeout time.Duration) (*Catalog, error) {
	args := []string{"catalog", "--wait", name, "--timeout", timeout.String()}
	if absent {
		args = append(args, "--absent")
	}
	return c.catalog(ctx, args...)
}

func (c *Client) catalog(ctx context.Context, args ...string) (*Catalog, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, &raw, args...); err != nil {
		return nil, err
	}
	var out Catalog
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	out.Raw = raw
	return &out, nil
}

// Skills returns the skills catalog and skill problems.
func (c *Client) Skills(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "skills")
}

// ExtStatus, ExtKill and ExtRestart drive the extension host.
func (c *Client) ExtStatus(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "ext", "status")
}

func (c *Client) ExtKill(ctx context.Context) error    { return c.Call(ctx, nil, "ext", "kill") }
func (c *Client) ExtRestart(ctx context.Context) error { return c.Call(ctx, nil, "ext", "restart") }

// ExtCall calls a plugin tool without consent (debug): args is the JSON
// arguments; zero durations are not sent.
func (c *Client) ExtCall(ctx context.Context, name string, args json.RawMessage, timeout, cancelAfter, disableAfter time.Duration) (json.RawMessage, error) {
	a := []string{"ext", "call", name}
	if len(args) > 0 {
		a = append(a, string(args))
	}
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{{"--timeout-ms", timeout}, {"--cancel-after-ms", cancelAfter}, {"--disable-after-ms", disableAfter}} {
		if f.d > 0 {
			a = append(a, f.flag, strconv.FormatInt(f.d.Milliseconds(), 10))
		}
	}
	var out json.RawMessage
	return out, c.Call(ctx, &out, a...)
}

// Consent auto-answer modes.
const (
	ConsentAllow     = "allow"
	ConsentAllowOnce = "allow-once"
	ConsentDeny      = "deny"
	ConsentOff       = "off"
)

// ConsentMode sets the auto-answer mode.
func (c *Client) ConsentMode(ctx context.Context, mode string) error {
	return c.Call(ctx, nil, "consent", "mode", mode)
}

// ConsentList, ConsentPending and ConsentRecent return the consent state.
func (c *Client) ConsentList(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "consent", "list")
}

func (c *Client) ConsentPending(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "consent", "pending")
}

func (c *Client) ConsentRecent(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "consent", "recent")
}

// ConsentRespond answers a card: ALLOW_ONCE, ALLOW_FOR_SESSION,
// ALWAYS_ALLOW or DENY.
func (c *Client) ConsentRespond(ctx context.Context, id, choice string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "consent", "respond", id, choice)
}

// ConsentDecision says how a card ended.
func (c *Client) ConsentDecision(ctx context.Context, id string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "consent", "decision", id)
}

// ConsentInject queues a test card; flags are ctl's (--risk R --tool T
// --args JSON --plugin P --server S --caller app|desktop|self --pkg P
// --timeout-ms N --remember=false).
func (c *Client) ConsentInject(ctx context.Context, flags ...string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, append([]string{"consent", "inject"}, flags...)...)
}

// CallersList returns the caller registry (callers, health, config,
// channels, signatureChanged, revocations).
func (c *Client) CallersList(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, "callers", "list")
}

// CallersAllow, CallersDeny, CallersRevoke and CallersRemove change a
// caller app's authorization.
func (c *Client) CallersAllow(ctx context.Context, pkg string) (json.RawMessage, error) {
	return c.raw(ctx, "callers", "allow", pkg)
}

func (c *Client) CallersDeny(ctx context.Context, pkg string) (json.RawMessage, error) {
	return c.raw(ctx, "callers", "deny", pkg)
}

func (c *Client) CallersRevoke(ctx context.Context, pkg string) (json.RawMessage, error) {
	return c.raw(ctx, "callers", "revoke", pkg)
}

func (c *Client) CallersRemove(ctx context.Context, pkg string) (json.RawMessage, error) {
	return c.raw(ctx, "callers", "remove", pkg)
}

// CallersAnswer answers a pending authorization card.
func (c *Client) CallersAnswer(ctx context.Context, requestID string, allow bool) (json.RawMessage, error) {
	a := "deny"
	if allow {
		a = "allow"
	}
	return c.raw(ctx, "callers", "answer", requestID, a)
}

// CallersConfig sets authorization timings (zero: not sent; none at all
// restores the defaults).
func (c *Client) CallersConfig(ctx context.Context, cooldown, ttl, abandon time.Duration) (json.RawMessage, error) {
	args := []string{"callers", "config"}
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{{"--cooldown", cooldown}, {"--ttl", ttl}, {"--abandon", abandon}} {
		if f.d > 0 {
			args = append(args, f.flag, f.d.String())
		}
	}
	return c.raw(ctx, args...)
}

// CodeResult is a new pairing code. The code is a secret of the owner:
// do not log it.
type CodeResult struct {
	Code        string `json:"code"`
	ExpiresInMs int64  `json:"expiresInMs"`
}

// DesktopEnable turns desktop access on and returns a pairing code.
func (c *Client) DesktopEnable(ctx context.Context) (*CodeResult, error) {
	var out CodeResult
	if err := c.Call(ctx, &out, "desktop", "enable"); err != nil {
		return nil, err
	}
	return &out, nil
}

// DesktopCode returns a new pairing code (replacing the active one).
func (c *Client) DesktopCode(ctx context.Context) (*CodeResult, error) {
	var out CodeResult
	if err := c.Call(ctx, &out, "desktop", "code"); err != nil {
		return nil, err
	}
	return &out, nil
}

// DesktopStatus is `desktop status`.
type DesktopStatus struct {
	Enabled     bool            `json:"enabled"`
	Listening   bool            `json:"listening"`
	ListenError string          `json:"listenError,omitempty"`
	Established int             `json:"established"`
	Pairings    int             `json:"pairings"`
	CodeActive  bool            `json:"codeActive"`
	Health      string          `json:"health"`
	Raw         json.RawMessage `json:"-"`
}

// DesktopStatus reports desktop access.
func (c *Client) DesktopStatus(ctx context.Context) (*DesktopStatus, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, &raw, "desktop", "status"); err != nil {
		return nil, err
	}
	var out DesktopStatus
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	out.Raw = raw
	return &out, nil
}

// DesktopDisable turns desktop access off (every pairing is dropped).
func (c *Client) DesktopDisable(ctx context.Context) error {
	return c.Call(ctx, nil, "desktop", "disable")
}

// DesktopList lists the paired computers.
func (c *Client) DesktopList(ctx context.Context) (json.RawMessage, error) {
	return c.raw(ctx, "desktop", "list")
}

// DesktopRevoke revokes one paired computer.
func (c *Client) DesktopRevoke(ctx context.Context, pairingID string) error {
	return c.Call(ctx, nil, "desktop", "revoke", pairingID)
}

func (c *Client) raw(ctx context.Context, args ...string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.Call(ctx, &out, args...)
}
