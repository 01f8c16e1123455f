package apps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// App is a bundle's app.json: who the app is and what it runs.
//
//	{
//	  "package": "org.agentos.sample.notes",
//	  "label": "备忘录",
//	  "versionCode": 3,
//	  "versionName": "1.0.2",
//	  "binary": "notes",
//	  "services": [{"name": "org.agentos.sample.notes.NotesMcpService", "kind": "mcp", "server": "notes"}],
//	  "caller": true,
//	  "sharedUserId": "org.agentos.shared",
//	  "commands": ["dump", "reset", "seed", "tool"],
//	  "permissions": ["network"]
//	}
//
// package, label, versionCode and binary are required. Keys are
// case-sensitive; unknown or repeated keys are errors.
type App struct {
	// Package is the app's identity with its signer: dot-separated
	// segments of [A-Za-z][A-Za-z0-9_]*, at least two, ≤ 96 bytes.
	Package string `json:"package"`
	// Label is the display name: 1–64 characters, no control characters.
	Label string `json:"label"`
	// VersionCode orders versions; upgrades never go down.
	VersionCode int64 `json:"versionCode"`
	// VersionName is for people (≤ 64 printable characters).
	VersionName string `json:"versionName,omitempty"`
	// Binary is the file name of the app's executable: the bundle holds
	// it as bin/<abi>/<binary> for one or more ABIs.
	Binary string `json:"binary"`
	// Services are the app's MCP servers (kind "mcp") and ACI services
	// (kind "aci"). plugin.json's extensions."org.agentos".mcpServers.<x>.service
	// names an MCP one; the launcher runs `<binary> serve --server <Server>`
	// for either kind.
	Services []Service `json:"services,omitempty"`
	// Caller says the app may call AgentOS over ACP.
	Caller bool `json:"caller,omitempty"`
	// SharedUserID, when set, shares one uid among the packages that
	// declare it and have the same signer (like Android's sharedUserId).
	SharedUserID string `json:"sharedUserId,omitempty"`
	// Commands are the one-shot debug commands `agentosd ctl app run`
	// may start (the first argument must be one of them).
	Commands []string `json:"commands,omitempty"`
	// Permissions are what the app asks of the system, like Android's
	// uses-permission: PermissionNetwork, PermissionACI, or an app-defined
	// permission ("<package>.permission.<NAME>", which an ACI capability
	// may require of its callers). Without PermissionNetwork the launcher
	// starts the app without the inet group, and a device that enforces
	// it (Android's paranoid network) refuses the app's sockets.
	Permissions []string `json:"permissions,omitempty"`
}

// Permissions an app may declare.
const (
	// PermissionNetwork: the app opens network sockets (Android's
	// INTERNET permission); its processes get the inet group.
	PermissionNetwork = "network"
	// PermissionACI: the app may have AgentOS call other apps' ACI
	// capabilities for it (upstream's ai.aci.permission.CALL). Without it
	// a session the app opened sees no ACI capability work.
	PermissionACI = "aci"
)

// knownPermissions lists every system permission app.json may declare.
var knownPermissions = []string{PermissionNetwork, PermissionACI}

// CustomPermission reports whether perm names an app-defined permission:
// "<package>.permission.<NAME>" (Android's custom permissions), what an ACI
// capability's requirePermission names.
func CustomPermission(perm string) bool {
	pkg, name, ok := strings.Cut(perm, ".permission.")
	if !ok || !ValidPackage(pkg) || name == "" || len(perm) > 255 {
		return false
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// HasPermission reports whether the app declares perm.
func (a *App) HasPermission(perm string) bool { return slices.Contains(a.Permissions, perm) }

// InetGID is Android's inet group (AID_INET): on Android a process opens
// AF_INET and AF_INET6 sockets only with it (or as root).
const InetGID = 3003

// UsesNetwork reports whether the app declares network use.
func (a *App) UsesNetwork() bool { return slices.Contains(a.Permissions, PermissionNetwork) }

// Service is one MCP server or ACI service of an app.
type Service struct {
	// Name is the service's name (a Java-style class name upstream):
	// printable ASCII without spaces, ≤ 255 bytes.
	Name string `json:"name"`
	// Kind is "mcp" or "aci".
	Kind string `json:"kind"`
	// Server names the server: [A-Za-z0-9_-]{1,32}, unique among the
	// app's services of both kinds. Its socket is
	// transport.Names.App(package, server) for an MCP server and
	// transport.Names.ACI(package, server) for an ACI service.
	Server string `json:"server"`
}

// Limits of app.json.
const (
	MaxAppJSONBytes = 64 << 10
	MaxPackageLen   = 96
	MaxLabelChars   = 64
	MaxServices     = 16
	MaxCommands     = 64
	maxJSONDepth    = 16
)

// Service kinds.
const (
	// ServiceKindMCP is an MCP server (runtime/sdk/plugin).
	ServiceKindMCP = "mcp"
	// ServiceKindACI is an ACI service of a controlled app (runtime/sdk/aci).
	ServiceKindACI = "aci"
)

// AppError is a problem with app.json: the field (a JSON path such as
// "services[1].server", or "" for the document) and what is wrong.
type AppError struct {
	Field  string
	Reason string
}

func (e *AppError) Error() string {
	if e.Field == "" {
		return "app.json: " + e.Reason
	}
	return fmt.Sprintf("app.json: %s: %s", e.Field, e.Reason)
}

var (
	packageSegment = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	binaryName     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	serverName     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	commandName    = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
)

// ValidPackage reports whether s is a valid package name.
func ValidPackage(s string) bool {
	if len(s) == 0 || len(s) > MaxPackageLen {
		return false
	}
	segs := strings.Split(s, ".")
	if len(segs) < 2 {
		return false
	}
	for _, seg := range segs {
		if !packageSegment.MatchString(seg) {
			return false
		}
	}
	return true
}

// ParseApp parses and validates app.json strictly: at most
// MaxAppJSONBytes, one JSON object, case-sensitive known keys only, no
// repeated keys, every field checked. The error is an *AppError.
func ParseApp(data []byte) (*App, error) {
	if len(data) > MaxAppJSONBytes {
		return nil, &AppError{Reason: fmt.Sprintf("larger than %d bytes", MaxAppJSONBytes)}
	}
	if !utf8.Valid(data) {
		return nil, &AppError{Reason: "not UTF-8"}
	}
	if err := checkJSON(data); err != nil {
		return nil, err
	}
	top, _ := members(data)
	if err := onlyKeys(top, "", "package", "label", "versionCode", "versionName", "binary", "services", "caller", "sharedUserId", "commands", "permissions"); err != nil {
		return nil, err
	}
	var a App
	var err error
	get := func(k string) (json.RawMessage, bool) {
		i := slices.IndexFunc(top, func(m member) bool { return m.key == k })
		if i < 0 {
			return nil, false
		}
		return top[i].val, true
	}
	str := func(k string, required bool) string {
		if err != nil {
			return ""
		}
		raw, ok := get(k)
		if !ok {
			if required {
				err = &AppError{Field: k, Reason: "required"}
			}
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			err = &AppError{Field: k, Reason: "must be a string"}
		}
		return s
	}
	a.Package = str("package", true)
	a.Label = str("label", true)
	a.VersionName = str("versionName", false)
	a.Binary = str("binary", true)
	a.SharedUserID = str("sharedUserId", false)
	if err != nil {
		return nil, err
	}
	raw, ok := get("versionCode")
	if !ok {
		return nil, &AppError{Field: "versionCode", Reason: "required"}
	}
	if a.VersionCode, err = parseVersionCode(raw); err != nil {
		return nil, err
	}
	if raw, ok := get("caller"); ok {
		if json.Unmarshal(raw, &a.Caller) != nil {
			return nil, &AppError{Field: "caller", Reason: "must be true or false"}
		}
	}
	if raw, ok := get("services"); ok {
		if a.Services, err = parseServices(raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := get("commands"); ok {
		if json.Unmarshal(raw, &a.Commands) != nil || a.Commands == nil {
			return nil, &AppError{Field: "commands", Reason: "must be an array of strings"}
		}
	}
	if raw, ok := get("permissions"); ok {
		if json.Unmarshal(raw, &a.Permissions) != nil || a.Permissions == nil {
			return nil, &AppError{Field: "permissions", Reason: "must be an array of strings"}
		}
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if len(a.Permissions) == 0 {
		a.Permissions = nil
	}
	// An empty list means the same as an absent one.
	if len(a.Services) == 0 {
		a.Services = nil
	}
	if len(a.Commands) == 0 {
		a.Commands = nil
	}
	return &a, nil
}

// Validate checks every field's rule; the error is an *AppError.
func (a *App) Validate() error {
	if !ValidPackage(a.Package) {
		return &AppError{Field: "package", Reason: fmt.Sprintf("%q is not a package name (two or more dot-separated segments of [A-Za-z][A-Za-z0-9_]*, at most %d bytes)", clipText(a.Package), MaxPackageLen)}
	}
	if n := utf8.RuneCountInString(a.Label); n == 0 || n > MaxLabelChars || strings.TrimSpace(a.Label) == "" || hasControl(a.Label) {
		return &AppError{Field: "label", Reason: fmt.Sprintf("must be 1 to %d characters without control characters", MaxLabelChars)}
	}
	if a.VersionCode < 0 {
		return &AppError{Field: "versionCode", Reason: "must not be negative"}
	}
	if utf8.RuneCountInString(a.VersionName) > 64 || hasControl(a.VersionName) {
		return &AppError{Field: "versionName", Reason: "must be at most 64 characters without control characters"}
	}
	if !binaryName.MatchString(a.Binary) || a.Binary == "." || a.Binary == ".." {
		return &AppError{Field: "binary", Reason: fmt.Sprintf("%q is not a file name ([A-Za-z0-9][A-Za-z0-9._-]{0,63})", clipText(a.Binary))}
	}
	if a.SharedUserID != "" && !ValidPackage(a.SharedUserID) {
		return &AppError{Field: "sharedUserId", Reason: fmt.Sprintf("%q is not a valid shared user name (package-name rules)", clipText(a.SharedUserID))}
	}
	if len(a.Services) > MaxServices {
		return &AppError{Field: "services", Reason: fmt.Sprintf("more than %d services", MaxServices)}
	}
	names, servers := map[string]bool{}, map[string]bool{}
	for i, s := range a.Services {
		f := fmt.Sprintf("services[%d]", i)
		switch {
		case !validServiceName(s.Name):
			return &AppError{Field: f + ".name", Reason: "must be 1 to 255 printable ASCII characters without spaces"}
		case s.Kind != ServiceKindMCP && s.Kind != ServiceKindACI:
			return &AppError{Field: f + ".kind", Reason: fmt.Sprintf("%q is not a service kind (%q or %q)", clipText(s.Kind), ServiceKindMCP, ServiceKindACI)}
		case !serverName.MatchString(s.Server):
			return &AppError{Field: f + ".server", Reason: fmt.Sprintf("%q is not a server name ([A-Za-z0-9_-]{1,32})", clipText(s.Server))}
		case names[s.Name]:
			return &AppError{Field: f + ".name", Reason: fmt.Sprintf("service %q listed twice", s.Name)}
		case servers[s.Server]:
			return &AppError{Field: f + ".server", Reason: fmt.Sprintf("server %q listed twice", s.Server)}
		}
		names[s.Name], servers[s.Server] = true, true
	}
	if len(a.Commands) > MaxCommands {
		return &AppError{Field: "commands", Reason: fmt.Sprintf("more than %d commands", MaxCommands)}
	}
	seen := map[string]bool{}
	for i, c := range a.Commands {
		f := fmt.Sprintf("commands[%d]", i)
		switch {
		case !commandName.MatchString(c):
			return &AppError{Field: f, Reason: fmt.Sprintf("%q is not a command name ([a-z0-9][a-z0-9_-]{0,31})", clipText(c))}
		case c == "serve":
			return &AppError{Field: f, Reason: `"serve" is the launcher's; it cannot be a debug command`}
		case seen[c]:
			return &AppError{Field: f, Reason: fmt.Sprintf("command %q listed twice", c)}
		}
		seen[c] = true
	}
	perms := map[string]bool{}
	for i, perm := range a.Permissions {
		f := fmt.Sprintf("permissions[%d]", i)
		switch {
		case !slices.Contains(knownPermissions, perm) && !CustomPermission(perm):
			return &AppError{Field: f, Reason: fmt.Sprintf("%q is not a permission (known: %s, or <package>.permission.<NAME>)", clipText(perm), strings.Join(knownPermissions, ", "))}
		case perms[perm]:
			return &AppError{Field: f, Reason: fmt.Sprintf("permission %q listed twice", perm)}
		}
		perms[perm] = true
	}
	return nil
}

// Service returns the service whose Server is server.
func (a *App) Service(server string) (Service, bool) {
	for _, s := range a.Services {
		if s.Server == server {
			return s, true
		}
	}
	return Service{}, false
}

// HasCommand reports whether name is one of the app's debug commands.
func (a *App) HasCommand(name string) bool { return slices.Contains(a.Commands, name) }

func validServiceName(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			return true
		}
	}
	return false
}

func clipText(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

func parseVersionCode(raw json.RawMessage) (int64, error) {
	bad := &AppError{Field: "versionCode", Reason: "must be an integer from 0 to 9007199254740991"}
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || len(b) > 16 {
		return 0, bad
	}
	var n int64
	for i, c := range b {
		if c < '0' || c > '9' || (i == 0 && c == '0' && len(b) > 1) {
			return 0, bad
		}
		n = n*10 + int64(c-'0')
	}
	if n > 1<<53-1 {
		return 0, bad
	}
	return n, nil
}

func parseServices(raw json.RawMessage) ([]Service, error) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return nil, &AppError{Field: "services", Reason: "must be an array of objects"}
	}
	out := make([]Service, 0, len(items))
	for i, it := range items {
		f := fmt.Sprintf("services[%d]", i)
		ms, ok := members(it)
		if !ok {
			return nil, &AppError{Field: f, Reason: "must be an object"}
		}
		if err := onlyKeys(ms, f+".", "name", "kind", "server"); err != nil {
			return nil, err
		}
		var s Service
		for _, m := range ms {
			var v string
			if json.Unmarshal(m.val, &v) != nil {
				return nil, &AppError{Field: f + "." + m.key, Reason: "must be a string"}
			}
			switch m.key {
			case "name":
				s.Name = v
			case "kind":
				s.Kind = v
			case "server":
				s.Server = v
			}
		}
		for _, k := range []string{"name", "kind", "server"} {
			if !slices.ContainsFunc(ms, func(m member) bool { return m.key == k }) {
				return nil, &AppError{Field: f + "." + k, Reason: "required"}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// member is one key/value of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// members returns the members of a JSON object (ok false if raw is not
// exactly one object). Duplicates were rejected by checkJSON.
func members(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{k, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	return ms, true
}

func onlyKeys(ms []member, prefix string, allowed ...string) error {
	for _, m := range ms {
		if !slices.Contains(allowed, m.key) {
			return &AppError{Field: prefix + m.key, Reason: "unknown key (keys are case-sensitive)"}
		}
	}
	return nil
}

// checkJSON accepts exactly one JSON object with no repeated key at any
// level and nesting of at most maxJSONDepth. Two readers of a document
// with a repeated key could see different values.
func checkJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		obj  bool
		keys map[string]bool
		// wantKey: inside an object, the next string token is a key.
		wantKey bool
	}
	var stack []*frame
	first := true
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return &AppError{Reason: "not valid JSON"}
		}
		if first {
			if t != json.Delim('{') {
				return &AppError{Reason: "must be a JSON object"}
			}
			first = false
		} else if len(stack) == 0 {
			return &AppError{Reason: "trailing data after the object"}
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.wantKey {
			if d, ok := t.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := t.(string)
			if top.keys[k] {
				return &AppError{Field: k, Reason: "key repeated"}
			}
			top.keys[k] = true
			top.wantKey = false
			continue
		}
		if top != nil && top.obj {
			top.wantKey = true
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > maxJSONDepth {
			return &AppError{Reason: fmt.Sprintf("nested deeper than %d levels", maxJSONDepth)}
		}
	}
	if first {
		return &AppError{Reason: "empty document"}
	}
	if len(stack) != 0 {
		return &AppError{Reason: "not valid JSON"}
	}
	return nil
}
