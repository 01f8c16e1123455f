package wire

import (
	"encoding/json"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/ext/skills"
)

// Methods serve calls on the extension host.
const (
	// MethodCall runs a plugin tool: CallParams → CallResult.
	MethodCall = "tools.call"
	// MethodSkill reads a skill file for read_skill: SkillParams → SkillResult.
	MethodSkill = "skill.read"
	// MethodAlways is the consent card's "always allow" write-back:
	// AlwaysParams → {}.
	MethodAlways = "policy.setAlways"
	// MethodAdmin runs an owner operation: AdminParams → operation result.
	MethodAdmin = "admin"
)

// Notifications the extension host sends to serve.
const (
	// NotifyHello is the first message: Hello.
	NotifyHello = "hello"
	// NotifyCatalog pushes the whole catalog: Catalog.
	NotifyCatalog = "catalog"
)

// Hello introduces the extension host.
type Hello struct {
	PID     int    `json:"pid"`
	Version string `json:"version,omitempty"`
}

// CallParams is one plugin tool call.
type CallParams struct {
	// Name is the tool's final model name (for the texts the model reads).
	Name      string          `json:"name"`
	Source    catalog.ToolID  `json:"source"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// TimeoutMs bounds the provider's answer; 0 means the host's default.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// CallResult is what a call produced, shaped for engine.ToolResult.
type CallResult struct {
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structured,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	// Code is set for runtime-made errors (tool_timeout, …); Text is then
	// the full "[agentos:<code>] …" text.
	Code    string         `json:"code,omitempty"`
	Outcome string         `json:"outcome"`
	Details map[string]any `json:"details,omitempty"`
	// ProviderPID is the provider process that answered (0 when none).
	ProviderPID int `json:"providerPid,omitempty"`
}

// SkillParams asks for a skill file.
type SkillParams struct {
	Name string `json:"name"`
	Path string `json:"path,omitempty"`
}

// SkillResult is read_skill's result text.
type SkillResult struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

// AlwaysParams names the tool to always allow.
type AlwaysParams struct {
	Source catalog.ToolID `json:"source"`
}

// AdminParams is one owner operation, forwarded from the admin API.
type AdminParams struct {
	Op     string          `json:"op"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Health is the state of the host's two persisted files.
type Health struct {
	// Policy is healthy, recovered (read from the backup) or corrupt
	// (both unreadable: fail closed until reset).
	Policy string `json:"policy"`
	// PolicyUsing is file, backup, new or fail_closed.
	PolicyUsing string `json:"policyUsing"`
	// Memory is intact, recovered or reset (both copies unreadable: every
	// third-party plugin must be confirmed again).
	Memory string `json:"memory"`
}

// Catalog is the whole catalog, pushed on every change.
type Catalog struct {
	Version uint64          `json:"version"`
	Tools   []catalog.Entry `json:"tools"`
	Skills  []skills.Skill  `json:"skills"`
	Health  Health          `json:"health"`
}
