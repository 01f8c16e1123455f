package consent

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/agentoslab/agentlab/runtime/catalog"
)

// Card limits (spec §4.6).
const (
	// PreviewChars is how much of the JSON arguments the broker passes:
	// the first 2,000 UTF-16 code units.
	PreviewChars = 2000
	// MaxArgumentChars is the cleaned arguments preview, in code points.
	MaxArgumentChars = 600
	// MaxDisplayNameChars is the tool display name, in code points.
	MaxDisplayNameChars = 80
	// MaxSourceChars is each plugin/server name in the source line.
	MaxSourceChars = 48
	// MaxCallerLabelChars is the app label in the initiator line.
	MaxCallerLabelChars = 128
	// DefaultTimeout is how long a consent request waits, from creation,
	// queue time included.
	DefaultTimeout = 60 * time.Second
)

// Severity is how a card is styled.
type Severity string

const (
	SeverityNormal   Severity = "NORMAL"
	SeverityElevated Severity = "ELEVATED"
	SeverityCritical Severity = "CRITICAL"
)

// Caller kinds, the same strings as engine.CallerKind (the consent
// package does not import the engine, which imports the store).
const (
	CallerSelf    = "SELF"
	CallerApp     = "APP"
	CallerDesktop = "DESKTOP"
	CallerSystem  = "SYSTEM"
)

// Initiator is who started the call: engine.Caller's fields
// (consent.Initiator{Kind: string(c.Kind), UID: c.UID, Package: c.Package,
// Label: c.Label}).
type Initiator struct {
	Kind    string
	UID     int
	Package string // APP only, from the package table
	Label   string // display only; apps may spoof it
}

// CardCaller is who started the call, as the card shows it.
type CardCaller struct {
	Kind        string `json:"kind"`
	UID         int    `json:"uid"`
	PackageName string `json:"packageName,omitempty"`
}

// CardOption is one button of a card.
type CardOption struct {
	Choice Choice `json:"choice"`
	Label  string `json:"label"`
	// Destructive marks a button that allows a HIGH-risk call.
	Destructive bool `json:"destructive"`
}

// Card is the display model of one consent request (ConsentView, spec
// §5.5). Every third-party string in it has been cleaned with SingleLine
// or Block.
type Card struct {
	RequestID          string          `json:"requestId"`
	SessionID          string          `json:"sessionId"`
	TaskID             string          `json:"taskId"`
	Title              string          `json:"title"`
	InitiatorLine      string          `json:"initiatorLine"`
	Caller             CardCaller      `json:"caller"`
	SourceLine         string          `json:"sourceLine,omitempty"`
	Source             *catalog.ToolID `json:"source,omitempty"`
	ToolDisplayName    string          `json:"toolDisplayName"`
	ToolName           string          `json:"toolName"`
	ArgumentsPreview   string          `json:"argumentsPreview"`
	ArgumentsTruncated bool            `json:"argumentsTruncated"`
	Risk               catalog.Risk    `json:"risk"`
	Severity           Severity        `json:"severity"`
	RiskLabel          string          `json:"riskLabel"`
	RiskDescription    string          `json:"riskDescription"`
	Options            []CardOption    `json:"options"`
	CreatedAtMillis    int64           `json:"createdAtMillis"`
	DeadlineMillis     int64           `json:"deadlineMillis"`
	TimeoutMillis      int64           `json:"timeoutMillis"`
	QueuePosition      int             `json:"queuePosition"`
	QueueSize          int             `json:"queueSize"`
}

// CardRequest is everything BuildCard needs about one request.
type CardRequest struct {
	RequestID, SessionID, TaskID string
	Caller                       Initiator
	// ToolName is the final model name (mcp__…, ses__…).
	ToolName string
	// ToolTitle is the tool's title from its server, if any.
	ToolTitle string
	// Source is set for plugin tools.
	Source *catalog.ToolID
	// SessionServer is the caller-supplied server's name, for session tools.
	SessionServer string
	// ACIApp is the app whose ACI capability is called (its label or
	// package), for ACI capabilities.
	ACIApp string
	// Arguments is the call's JSON arguments as the model sent them.
	Arguments json.RawMessage
	Risk      catalog.Risk
	// Options are the choices from Options (in order).
	Options       []Choice
	CreatedAt     time.Time
	Timeout       time.Duration // 0 = DefaultTimeout
	QueuePosition int
	QueueSize     int
}

// Card texts (zh-CN, as on the phone).
const (
	initiatorDesktop    = "由电脑端发起"
	initiatorSelf       = "由 AgentOS 自己发起"
	initiatorSystem     = "由 AgentOS 运行时发起"
	initiatorUnknownApp = "由未知应用发起"
	initiatorUnknown    = "由未知调用方发起"
)

var riskTexts = map[catalog.Risk]struct {
	label, description string
	severity           Severity
}{
	catalog.RiskRead:  {"只读", "只会读取数据，不会修改任何内容。", SeverityNormal},
	catalog.RiskWrite: {"会修改数据", "会新建、修改或删除你的数据。", SeverityElevated},
	catalog.RiskHigh:  {"高风险", "可能造成无法撤销的后果，请确认后再允许。", SeverityCritical},
}

var choiceLabels = map[Choice]string{
	AllowOnce:       "允许一次",
	AllowForSession: "本次对话内不再询问",
	AlwaysAllow:     "始终允许这个工具",
	Deny:            "拒绝",
}

// BuildCard builds a card (spec §5.5):
//   - display name: the tool title if any, else the raw MCP tool name,
//     else the model name; one line, at most 80 code points;
//   - title 要允许「<display>」吗？;
//   - initiator by caller kind: APP 由 <label> 发起（<package>）(label at
//     most 128 code points, display only; the package is never cut),
//     DESKTOP 由电脑端发起, SELF 由 AgentOS 自己发起, SYSTEM 由 AgentOS 运行时发起;
//   - source line 来自插件「p」 · 服务器「s」 (each at most 48 code points),
//     or, for a session tool, 来自调用方提供的服务器「s」;
//   - risk label, description and severity; option labels;
//   - arguments preview: the first 2,000 UTF-16 units of the compact JSON,
//     cleaned with Block and cut to 600 code points; ArgumentsTruncated if
//     either cut happened.
func BuildCard(r CardRequest) Card {
	risk := r.Risk
	if !risk.Valid() {
		risk = catalog.RiskHigh // fail closed
	}
	display := SingleLine(r.ToolTitle, MaxDisplayNameChars)
	if display == "" && r.Source != nil {
		display = SingleLine(r.Source.Tool, MaxDisplayNameChars)
	}
	if display == "" {
		display = SingleLine(r.ToolName, MaxDisplayNameChars)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	preview, truncated := ArgumentsPreview(r.Arguments)
	rt := riskTexts[risk]
	c := Card{
		RequestID:          r.RequestID,
		SessionID:          r.SessionID,
		TaskID:             r.TaskID,
		Title:              "要允许「" + display + "」吗？",
		InitiatorLine:      initiatorLine(r.Caller),
		Caller:             CardCaller{Kind: r.Caller.Kind, UID: r.Caller.UID},
		ToolDisplayName:    display,
		ToolName:           r.ToolName,
		ArgumentsPreview:   preview,
		ArgumentsTruncated: truncated,
		Risk:               risk,
		Severity:           rt.severity,
		RiskLabel:          rt.label,
		RiskDescription:    rt.description,
		CreatedAtMillis:    r.CreatedAt.UnixMilli(),
		DeadlineMillis:     r.CreatedAt.Add(timeout).UnixMilli(),
		TimeoutMillis:      timeout.Milliseconds(),
		QueuePosition:      r.QueuePosition,
		QueueSize:          r.QueueSize,
	}
	if r.Caller.Kind == CallerApp {
		c.Caller.PackageName = r.Caller.Package
	}
	switch {
	case r.Source != nil:
		src := *r.Source
		c.Source = &src
		c.SourceLine = "来自插件「" + SingleLine(src.Plugin, MaxSourceChars) + "」 · 服务器「" + SingleLine(src.Server, MaxSourceChars) + "」"
	case r.SessionServer != "":
		c.SourceLine = "来自调用方提供的服务器「" + SingleLine(r.SessionServer, MaxSourceChars) + "」"
	case r.ACIApp != "":
		c.SourceLine = "来自应用「" + SingleLine(r.ACIApp, MaxSourceChars) + "」的 ACI 能力"
	}
	for _, ch := range r.Options {
		label, ok := choiceLabels[ch]
		if !ok {
			continue // not a choice; never shown
		}
		c.Options = append(c.Options, CardOption{
			Choice:      ch,
			Label:       label,
			Destructive: ch != Deny && risk == catalog.RiskHigh,
		})
	}
	return c
}

// noLimit is a cut larger than any string: package names are shown in
// full (they identify the app; only the label can be spoofed).
const noLimit = int(^uint(0) >> 1)

func initiatorLine(c Initiator) string {
	switch c.Kind {
	case CallerDesktop:
		return initiatorDesktop
	case CallerSelf:
		return initiatorSelf
	case CallerSystem:
		return initiatorSystem
	case CallerApp:
		label := SingleLine(c.Label, MaxCallerLabelChars)
		pkg := SingleLine(c.Package, noLimit)
		switch {
		case label != "" && pkg != "":
			return "由 " + label + " 发起（" + pkg + "）"
		case pkg != "":
			return initiatorUnknownApp + "（" + pkg + "）"
		case label != "":
			return "由 " + label + " 发起"
		}
		return initiatorUnknownApp
	}
	return initiatorUnknown
}

// ArgumentsPreview is the card's view of a call's arguments: the compact
// JSON cut to its first 2,000 UTF-16 units (as the broker passes it),
// then cleaned with Block and cut to 600 code points. truncated reports
// whether either cut happened.
func ArgumentsPreview(args json.RawMessage) (preview string, truncated bool) {
	var buf bytes.Buffer
	s := string(args)
	if json.Compact(&buf, args) == nil {
		s = buf.String()
	}
	s, cut1 := takeUTF16(s, PreviewChars)
	preview, cut2 := block(s, MaxArgumentChars)
	return preview, cut1 || cut2
}

// takeUTF16 keeps the first n UTF-16 code units of s. A surrogate pair
// split by the cut is dropped whole (Java would keep a lone high
// surrogate that the sanitiser then drops: same result).
func takeUTF16(s string, n int) (string, bool) {
	units := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > n {
			return s[:i], true
		}
		units += w
	}
	return s, false
}
