// Package sdui is the ACI console's server-driven UI, schema
// "aci-sdui-v1", as upstream's code really emits and parses it (not its
// guide, whose schema is wrong): a callee's console_ui returns a
// snapshot, console_action applies an action, and a controller renders
// the snapshot (Text here; the owner's web console as HTML).
//
//	{"title":…, "subtitle":…, "updatedAt":<epoch ms>, "schema_version":"aci-sdui-v1",
//	 "components":[{"type":"heading","text":…}, {"type":"text","text":…},
//	               {"type":"card","title":…,"body":…}, {"type":"button","action":…,"label":…},
//	               {"type":"divider"}, {"type":"spacer"},
//	               {"type":"input","key":…,"label":…,"placeholder":…,"value":…,"action":…},
//	               {"type":"listitem","text":…}]}
//
// A button's action is sent with the payload {}; an input's with both
// spellings upstream's renderers use, {"value": text, "key": key, <key>:
// text}, and Value reads either, so a backend works with every
// controller.
package sdui

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SchemaVersion is the schema this package speaks.
const SchemaVersion = "aci-sdui-v1"

// Component types.
const (
	Heading  = "heading"
	Text     = "text"
	Card     = "card"
	Button   = "button"
	Divider  = "divider"
	Spacer   = "spacer"
	Input    = "input"
	ListItem = "listitem"
)

// Component is one element of a snapshot. Type says which fields count.
type Component struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	Title       string `json:"title,omitempty"`
	Body        string `json:"body,omitempty"`
	Action      string `json:"action,omitempty"`
	Label       string `json:"label,omitempty"`
	Key         string `json:"key,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
	Value       string `json:"value,omitempty"`
}

// Snapshot is the console's state.
type Snapshot struct {
	Title         string      `json:"title"`
	Subtitle      string      `json:"subtitle,omitempty"`
	UpdatedAt     int64       `json:"updatedAt"`
	SchemaVersion string      `json:"schema_version,omitempty"`
	Components    []Component `json:"components"`
}

// Defaults upstream's parser fills in.
const (
	DefaultTitle       = "ACI 控制台"
	DefaultButtonLabel = "按钮"
	DefaultInputLabel  = "输入"
)

// MaxSnapshotBytes bounds a snapshot.
const MaxSnapshotBytes = 1 << 20

// Parse reads a snapshot with upstream's defaults: a missing title is
// DefaultTitle, button and input labels default, and an updatedAt that is
// not a number (the guide's ISO string) is 0. warning is set when the
// schema version is another one (the snapshot is still read, as
// upstream does).
func Parse(data []byte) (s *Snapshot, warning string, err error) {
	if len(data) > MaxSnapshotBytes {
		return nil, "", fmt.Errorf("sdui: snapshot larger than %d bytes", MaxSnapshotBytes)
	}
	var raw struct {
		Title         string            `json:"title"`
		Subtitle      string            `json:"subtitle"`
		UpdatedAt     json.RawMessage   `json:"updatedAt"`
		SchemaVersion string            `json:"schema_version"`
		Components    []json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, "", fmt.Errorf("sdui: not a snapshot: %w", err)
	}
	s = &Snapshot{Title: raw.Title, Subtitle: raw.Subtitle, SchemaVersion: raw.SchemaVersion}
	if s.Title == "" {
		s.Title = DefaultTitle
	}
	var ms int64
	if json.Unmarshal(raw.UpdatedAt, &ms) == nil {
		s.UpdatedAt = ms
	}
	if s.SchemaVersion != "" && s.SchemaVersion != SchemaVersion {
		warning = fmt.Sprintf("snapshot schema %q, this console speaks %q", s.SchemaVersion, SchemaVersion)
	}
	for _, rc := range raw.Components {
		var c Component
		if json.Unmarshal(rc, &c) != nil {
			c = Component{Type: "?"}
		}
		switch c.Type {
		case Button:
			if c.Label == "" {
				c.Label = DefaultButtonLabel
			}
		case Input:
			if c.Label == "" {
				c.Label = DefaultInputLabel
			}
		}
		s.Components = append(s.Components, c)
	}
	return s, warning, nil
}

// Known reports whether t is a component type of the schema.
func Known(t string) bool {
	switch t {
	case Heading, Text, Card, Button, Divider, Spacer, Input, ListItem:
		return true
	}
	return false
}

// RenderText renders a snapshot for a terminal. Buttons and inputs show
// their action so an operator can apply it; an unknown type is shown as
// such ("[未知组件: <type>]", as upstream's console), never dropped.
func RenderText(s *Snapshot) string {
	var b strings.Builder
	b.WriteString(s.Title)
	b.WriteByte('\n')
	if s.Subtitle != "" {
		b.WriteString(s.Subtitle)
		b.WriteByte('\n')
	}
	for _, c := range s.Components {
		switch c.Type {
		case Heading:
			fmt.Fprintf(&b, "\n## %s\n", c.Text)
		case Text:
			fmt.Fprintf(&b, "%s\n", c.Text)
		case Card:
			fmt.Fprintf(&b, "[ %s ]\n  %s\n", c.Title, strings.ReplaceAll(c.Body, "\n", "\n  "))
		case Button:
			fmt.Fprintf(&b, "(%s) → action %s\n", c.Label, c.Action)
		case Divider:
			b.WriteString("----\n")
		case Spacer:
			b.WriteByte('\n')
		case Input:
			fmt.Fprintf(&b, "%s: [%s] (placeholder %q) → action %s, key %s\n", c.Label, c.Value, c.Placeholder, c.Action, c.Key)
		case ListItem:
			fmt.Fprintf(&b, "• %s\n", c.Text)
		default:
			fmt.Fprintf(&b, "[未知组件: %s]\n", c.Type)
		}
	}
	return b.String()
}

// InputPayload is what a controller sends for an input: both spellings.
func InputPayload(key, text string) map[string]string {
	p := map[string]string{"value": text, "key": key}
	if key != "" && key != "value" && key != "key" {
		p[key] = text
	}
	return p
}

// Value reads an input's text from an action payload, whichever
// spelling the controller used: the input's own key (upstream's View
// console) or "value" (upstream's Compose console). payload is the JSON
// object console_action received ("" or "{}" for a button).
func Value(payload, key string) (string, bool) {
	if strings.TrimSpace(payload) == "" {
		return "", false
	}
	var m map[string]any
	if json.Unmarshal([]byte(payload), &m) != nil {
		return "", false
	}
	for _, k := range []string{key, "value"} {
		if k == "" {
			continue
		}
		if v, ok := m[k]; ok {
			switch x := v.(type) {
			case string:
				return x, true
			case nil:
			default:
				b, _ := json.Marshal(x)
				return string(b), true
			}
		}
	}
	return "", false
}
