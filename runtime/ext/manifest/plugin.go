package manifest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxJSONBytes is the largest plugin.json or mcp.json read; a larger file
// is treated as missing (spec §4.9).
const MaxJSONBytes = 262144

// Schema URLs a manifest's "$schema" must equal.
const (
	PluginSchemaURL = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
	MCPSchemaURL    = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
)

// Code is a manifest problem code. A plugin with any problem is rejected
// (status UNAVAILABLE, MANIFEST_REJECTED).
type Code string

const (
	NotJSON          Code = "NOT_JSON"
	Schema           Code = "SCHEMA"
	OrgAgentOS       Code = "ORG_AGENTOS"
	DuplicateServer  Code = "DUPLICATE_SERVER"
	BinderNotAllowed Code = "BINDER_NOT_ALLOWED"
)

// Problem is one reason a manifest is rejected. Path says where (keys
// joined with "/", third-party keys cut to 64 characters); Message is an
// English sentence for the plugin page.
type Problem struct {
	Code    Code   `json:"code"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string { return string(p.Code) + " " + p.Path + ": " + p.Message }

// Reasons a part of a valid manifest cannot be used. They never reject
// the plugin.
const (
	UnsafePath  = "UNSAFE_PATH"
	StdioServer = "STDIO_SERVER"
	SSEServer   = "SSE_SERVER"
	InsecureURL = "INSECURE_URL"
)

// Unsupported is a part of a manifest that is valid but not used.
type Unsupported struct {
	Reason string `json:"reason"`
	Path   string `json:"path"`
}

// Author is plugin.json's author object.
type Author struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// AppServer is an MCP server the plugin's app serves (plugin.json
// extensions."org.agentos".mcpServers.<Name>.service). In the Go runtime
// Service names the app's MCP service, which listens on the abstract
// socket SocketName(package, Name).
type AppServer struct {
	Name    string `json:"name"`
	Service string `json:"service"`
}

// SocketName is the abstract unix socket an app's MCP server listens on:
// "@agentos-app.<package>.<server>".
func SocketName(pkg, server string) string { return "@agentos-app." + pkg + "." + server }

// Interface is what extensions."com.openai".interface says about display.
type Interface struct {
	DisplayName      string `json:"displayName,omitempty"`
	ShortDescription string `json:"shortDescription,omitempty"`
	LongDescription  string `json:"longDescription,omitempty"`
	// Icon is composerIcon, else logo: a "./" path inside the plugin.
	Icon string `json:"icon,omitempty"`
}

// Hooks is what extensions."com.openai".hooks declares. When Declared,
// the default hooks/hooks.json is not read.
type Hooks struct {
	Declared bool              `json:"declared"`
	Paths    []string          `json:"paths,omitempty"`
	Inline   []json.RawMessage `json:"inline,omitempty"`
}

// Plugin is a validated plugin.json.
type Plugin struct {
	Name        string    `json:"name"`
	Version     string    `json:"version,omitempty"`
	Description string    `json:"description,omitempty"`
	Author      *Author   `json:"author,omitempty"`
	Homepage    string    `json:"homepage,omitempty"`
	Repository  string    `json:"repository,omitempty"`
	License     string    `json:"license,omitempty"`
	Keywords    []string  `json:"keywords,omitempty"`
	Interface   Interface `json:"interface"`
	Hooks       Hooks     `json:"hooks"`
	// Servers are the app's MCP servers, sorted by name.
	Servers     []AppServer   `json:"servers,omitempty"`
	Unsupported []Unsupported `json:"unsupported,omitempty"`
}

// DisplayName is interface.displayName if set, else name.
func (p *Plugin) DisplayName() string {
	if strings.TrimSpace(p.Interface.DisplayName) != "" {
		return p.Interface.DisplayName
	}
	return p.Name
}

var pluginKeys = map[string]bool{
	"$schema": true, "name": true, "version": true, "description": true, "author": true,
	"homepage": true, "repository": true, "license": true, "keywords": true, "extensions": true,
}

// ValidName reports whether s is a valid plugin name (spec §4.9): 1–64
// chars of a-z, 0-9, '.', '-', starting and ending with a letter or
// digit, without "--" or "..".
func ValidName(s string) bool {
	if len(s) < 1 || len(s) > 64 || strings.Contains(s, "--") || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && !((c == '.' || c == '-') && i > 0 && i < len(s)-1) {
			return false
		}
	}
	return true
}

// problems collects problems in one pass.
type problems []Problem

func (ps *problems) add(c Code, path, format string, args ...any) {
	*ps = append(*ps, Problem{Code: c, Path: path, Message: fmt.Sprintf(format, args...)})
}

// keyPath joins keys for a Problem or Unsupported path; a third-party
// key is cut to 64 characters and quoted when it is not plain.
func keyPath(parts ...string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		if utf8.RuneCountInString(p) > 64 {
			p = string([]rune(p)[:64]) + "…"
		}
		plain := p != ""
		for _, r := range p {
			if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-$[]", r))) {
				plain = false
				break
			}
		}
		if !plain {
			p = strconv.Quote(p)
		}
		out[i] = p
	}
	return strings.Join(out, "/")
}

// ParsePlugin validates a plugin.json of a plugin embedded in an
// installed app (spec §6.2) and collects every problem in one pass. A
// non-empty problem list rejects the plugin; the returned *Plugin then
// holds what could be read (nil when the file is not a JSON object).
// Data over MaxJSONBytes gives (nil, nil): treat the file as missing.
func ParsePlugin(data []byte) (*Plugin, []Problem) {
	if len(data) > MaxJSONBytes {
		return nil, nil
	}
	if !json.Valid(data) {
		return nil, []Problem{{Code: NotJSON, Message: "plugin.json is not valid JSON"}}
	}
	var ps problems
	top, _, ok := object(data)
	if !ok {
		ps.add(Schema, "", "plugin.json must be a JSON object")
		return nil, ps
	}
	scanStructure(&ps, data)
	p := &Plugin{}
	for _, m := range top {
		if !pluginKeys[m.key] {
			ps.add(Schema, keyPath(m.key), "unknown top-level key")
		}
	}
	if v, ok := get(top, "$schema"); !ok {
		ps.add(Schema, "$schema", "$schema is required")
	} else if s, ok := str(v); !ok || s != PluginSchemaURL {
		ps.add(Schema, "$schema", "$schema must be %s", PluginSchemaURL)
	}
	if v, ok := get(top, "name"); !ok {
		ps.add(Schema, "name", "name is required")
	} else if s, ok := str(v); !ok {
		ps.add(Schema, "name", "name must be a string")
	} else if !ValidName(s) {
		ps.add(Schema, "name", "name must be 1-64 characters of a-z, 0-9, '.', '-', start and end with a letter or digit, and contain no '--' or '..'")
	} else {
		p.Name = s
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"version", &p.Version}, {"description", &p.Description}, {"homepage", &p.Homepage}, {"repository", &p.Repository}, {"license", &p.License}} {
		if v, ok := get(top, f.key); ok {
			if s, ok := str(v); ok {
				*f.dst = s
			} else {
				ps.add(Schema, f.key, "%s must be a string", f.key)
			}
		}
	}
	if v, ok := get(top, "author"); ok {
		p.Author = readAuthor(&ps, v)
	}
	if v, ok := get(top, "keywords"); ok {
		elems, ok := array(v)
		if !ok {
			ps.add(Schema, "keywords", "keywords must be an array of strings")
		}
		for i, e := range elems {
			s, ok := str(e)
			if !ok {
				ps.add(Schema, keyPath("keywords", strconv.Itoa(i)), "keywords must be an array of strings")
				continue
			}
			p.Keywords = append(p.Keywords, s)
		}
	}
	if v, ok := get(top, "extensions"); ok {
		readExtensions(&ps, p, v)
	}
	return p, ps
}

// ParseImportedPlugin is ParsePlugin for a plugin imported as a zip:
// app MCP servers (org.agentos mcpServers) are not allowed there, since no
// installed app stands behind them (BINDER_NOT_ALLOWED).
func ParseImportedPlugin(data []byte) (*Plugin, []Problem) {
	p, ps := ParsePlugin(data)
	if p != nil && len(p.Servers) > 0 {
		ps = append(ps, Problem{Code: BinderNotAllowed, Path: keyPath("extensions", "org.agentos", "mcpServers"),
			Message: "an imported plugin cannot declare app MCP servers"})
	}
	return p, ps
}

func readAuthor(ps *problems, v json.RawMessage) *Author {
	ms, _, ok := object(v)
	if !ok {
		ps.add(Schema, "author", "author must be an object")
		return nil
	}
	a := &Author{}
	for _, m := range ms {
		var dst *string
		switch m.key {
		case "name":
			dst = &a.Name
		case "email":
			dst = &a.Email
		case "url":
			dst = &a.URL
		default:
			ps.add(Schema, keyPath("author", m.key), "author may only have name, email and url")
			continue
		}
		s, ok := str(m.val)
		if !ok {
			ps.add(Schema, keyPath("author", m.key), "author.%s must be a string", m.key)
			continue
		}
		*dst = s
	}
	return a
}

func readExtensions(ps *problems, p *Plugin, v json.RawMessage) {
	parts, _, ok := object(v)
	if !ok {
		ps.add(Schema, "extensions", "extensions must be an object")
		return
	}
	for _, part := range parts {
		if _, _, ok := object(part.val); !ok {
			ps.add(Schema, keyPath("extensions", part.key), "every extensions partition must be an object")
			continue
		}
		switch part.key {
		case "org.agentos":
			readOrgAgentOS(ps, p, part.val)
		case "com.openai":
			readComOpenAI(p, part.val)
		}
	}
}

func readOrgAgentOS(ps *problems, p *Plugin, v json.RawMessage) {
	ms, _, _ := object(v)
	raw, ok := get(ms, "mcpServers")
	if !ok {
		return
	}
	base := []string{"extensions", "org.agentos", "mcpServers"}
	servers, _, ok := object(raw)
	if !ok {
		ps.add(OrgAgentOS, keyPath(base...), "mcpServers must be an object")
		return
	}
	for _, s := range servers {
		path := keyPath(append(base, s.key)...)
		if s.key == "" {
			ps.add(OrgAgentOS, path, "server name must not be empty")
			continue
		}
		fields, _, ok := object(s.val)
		if !ok {
			ps.add(OrgAgentOS, path, "server must be an object")
			continue
		}
		sv, ok := get(fields, "service")
		service, isStr := str(sv)
		switch {
		case !ok:
			ps.add(OrgAgentOS, path+"/service", "service is required")
		case !isStr || service == "" || strings.IndexFunc(service, unicode.IsSpace) >= 0:
			ps.add(OrgAgentOS, path+"/service", "service must be a non-empty string without whitespace")
		default:
			p.Servers = append(p.Servers, AppServer{Name: s.key, Service: service})
		}
	}
	sort.Slice(p.Servers, func(i, j int) bool { return p.Servers[i].Name < p.Servers[j].Name })
}

// readComOpenAI reads interface and hooks; everything else of the
// partition (apps, …) is ignored, and wrongly typed optional values are
// treated as absent.
func readComOpenAI(p *Plugin, v json.RawMessage) {
	ms, _, _ := object(v)
	if raw, ok := get(ms, "interface"); ok {
		if fields, _, ok := object(raw); ok {
			for _, f := range []struct {
				key string
				dst *string
			}{{"displayName", &p.Interface.DisplayName}, {"shortDescription", &p.Interface.ShortDescription}, {"longDescription", &p.Interface.LongDescription}} {
				if s, ok := str(valueOf(fields, f.key)); ok {
					*f.dst = s
				}
			}
			iconKey := "composerIcon"
			icon, ok := str(valueOf(fields, iconKey))
			if !ok {
				iconKey = "logo"
				icon, ok = str(valueOf(fields, iconKey))
			}
			if ok {
				if SafePath(icon) {
					p.Interface.Icon = icon
				} else {
					p.Unsupported = append(p.Unsupported, Unsupported{Reason: UnsafePath, Path: keyPath("extensions", "com.openai", "interface", iconKey)})
				}
			}
		}
	}
	raw, ok := get(ms, "hooks")
	if !ok {
		return
	}
	base := []string{"extensions", "com.openai", "hooks"}
	addPath := func(s string, path string) {
		if SafePath(s) {
			p.Hooks.Paths = append(p.Hooks.Paths, s)
		} else {
			p.Unsupported = append(p.Unsupported, Unsupported{Reason: UnsafePath, Path: path})
		}
	}
	if s, ok := str(raw); ok {
		p.Hooks.Declared = true
		addPath(s, keyPath(base...))
		return
	}
	if _, _, ok := object(raw); ok {
		p.Hooks.Declared = true
		p.Hooks.Inline = append(p.Hooks.Inline, raw)
		return
	}
	if elems, ok := array(raw); ok {
		p.Hooks.Declared = true
		for i, e := range elems {
			if s, ok := str(e); ok {
				addPath(s, keyPath(append(base, strconv.Itoa(i))...))
			} else if _, _, ok := object(e); ok {
				p.Hooks.Inline = append(p.Hooks.Inline, e)
			}
		}
	}
}

func valueOf(ms []member, key string) json.RawMessage {
	v, _ := get(ms, key)
	return v
}

// SafePath reports whether a manifest path stays inside the plugin: it
// starts with "./", has no ".." segment, no backslash and no NUL.
func SafePath(s string) bool {
	if !strings.HasPrefix(s, "./") || len(s) == 2 || strings.ContainsAny(s, "\\\x00") {
		return false
	}
	for _, seg := range strings.Split(s[2:], "/") {
		if seg == ".." {
			return false
		}
	}
	return true
}
