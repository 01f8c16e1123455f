package manifest

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// Server types of mcp.json.
const (
	TypeStdio          = "stdio"
	TypeStreamableHTTP = "streamable-http"
	TypeSSE            = "sse"
)

// RemoteServer is one server of mcp.json. Only a streamable-http server
// with an https URL is usable; the others keep their reason.
type RemoteServer struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// URL is set for streamable-http and sse servers.
	URL string `json:"url,omitempty"`
	// HeaderNames are the names of the declared headers, sorted. Values
	// are never kept: the user enters them.
	HeaderNames []string `json:"headerNames,omitempty"`
	// Unsupported is "" for a usable server, else STDIO_SERVER,
	// SSE_SERVER or INSECURE_URL.
	Unsupported string `json:"unsupported,omitempty"`
}

// Usable reports whether the runtime can connect to the server.
func (s RemoteServer) Usable() bool { return s.Unsupported == "" }

// MCPConfig is a validated mcp.json.
type MCPConfig struct {
	// Servers sorted by name.
	Servers []RemoteServer `json:"servers"`
}

var (
	stdioKeys = map[string]bool{"type": true, "command": true, "args": true, "env": true, "cwd": true}
	httpKeys  = map[string]bool{"type": true, "url": true, "headers": true}
)

// ParseMCP validates an mcp.json (spec §6.3) and collects every problem
// in one pass; problems reject the plugin, unsupported servers do not.
// Data over MaxJSONBytes gives (nil, nil): treat the file as missing.
func ParseMCP(data []byte) (*MCPConfig, []Problem) {
	if len(data) > MaxJSONBytes {
		return nil, nil
	}
	if !json.Valid(data) {
		return nil, []Problem{{Code: NotJSON, Message: "mcp.json is not valid JSON"}}
	}
	var ps problems
	top, _, ok := object(data)
	if !ok {
		ps.add(Schema, "", "mcp.json must be a JSON object")
		return nil, ps
	}
	scanStructure(&ps, data)
	for _, m := range top {
		if m.key != "$schema" && m.key != "mcpServers" {
			ps.add(Schema, keyPath(m.key), "unknown top-level key")
		}
	}
	if v, ok := get(top, "$schema"); ok {
		if s, ok := str(v); !ok || s != MCPSchemaURL {
			ps.add(Schema, "$schema", "$schema must be %s", MCPSchemaURL)
		}
	}
	cfg := &MCPConfig{}
	raw, ok := get(top, "mcpServers")
	if !ok {
		ps.add(Schema, "mcpServers", "mcpServers is required")
		return cfg, ps
	}
	servers, _, ok := object(raw)
	if !ok {
		ps.add(Schema, "mcpServers", "mcpServers must be an object")
		return cfg, ps
	}
	for _, s := range servers {
		path := keyPath("mcpServers", s.key)
		if s.key == "" {
			ps.add(Schema, path, "server name must not be empty")
			continue
		}
		fields, _, ok := object(s.val)
		if !ok {
			ps.add(Schema, path, "server must be an object")
			continue
		}
		typ, _ := str(valueOf(fields, "type"))
		switch typ {
		case TypeStdio:
			if readStdio(&ps, path, fields) {
				cfg.Servers = append(cfg.Servers, RemoteServer{Name: s.key, Type: typ, Unsupported: StdioServer})
			}
		case TypeStreamableHTTP, TypeSSE:
			if srv, ok := readHTTP(&ps, path, typ, fields); ok {
				srv.Name = s.key
				cfg.Servers = append(cfg.Servers, srv)
			}
		default:
			ps.add(Schema, path+"/type", "type must be stdio, streamable-http or sse")
		}
	}
	sort.Slice(cfg.Servers, func(i, j int) bool { return cfg.Servers[i].Name < cfg.Servers[j].Name })
	return cfg, ps
}

func readStdio(ps *problems, path string, fields []member) bool {
	n := len(*ps)
	for _, m := range fields {
		if !stdioKeys[m.key] {
			ps.add(Schema, path+"/"+keyPath(m.key), "a stdio server may only have type, command, args, env and cwd")
		}
	}
	if c, ok := str(valueOf(fields, "command")); !ok || c == "" {
		ps.add(Schema, path+"/command", "command must be a non-empty string")
	}
	if v, ok := get(fields, "args"); ok {
		elems, ok := array(v)
		for _, e := range elems {
			if _, isStr := str(e); !isStr {
				ok = false
			}
		}
		if !ok {
			ps.add(Schema, path+"/args", "args must be an array of strings")
		}
	}
	if v, ok := get(fields, "env"); ok {
		env, ok := stringMap(v)
		if !ok {
			ps.add(Schema, path+"/env", "env must be an object of strings")
		}
		for _, reserved := range []string{"PLUGIN_ROOT", "PLUGIN_DATA"} {
			if _, set := env[reserved]; set {
				ps.add(Schema, path+"/env/"+reserved, "%s is reserved", reserved)
			}
		}
	}
	if v, ok := get(fields, "cwd"); ok {
		c, ok := str(v)
		if !ok || !(strings.HasPrefix(c, "./") || strings.HasPrefix(c, "${PLUGIN_ROOT}") || strings.HasPrefix(c, "${PLUGIN_DATA}")) {
			ps.add(Schema, path+"/cwd", "cwd must start with ./, ${PLUGIN_ROOT} or ${PLUGIN_DATA}")
		}
	}
	return len(*ps) == n
}

func readHTTP(ps *problems, path, typ string, fields []member) (RemoteServer, bool) {
	n := len(*ps)
	for _, m := range fields {
		if !httpKeys[m.key] {
			ps.add(Schema, path+"/"+keyPath(m.key), "an http or sse server may only have type, url and headers")
		}
	}
	u, ok := str(valueOf(fields, "url"))
	if !ok || u == "" {
		ps.add(Schema, path+"/url", "url must be a non-empty string")
	}
	var names []string
	if v, ok := get(fields, "headers"); ok {
		h, ok := stringMap(v)
		if !ok {
			ps.add(Schema, path+"/headers", "headers must be an object of strings")
		}
		for k := range h {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	if len(*ps) != n {
		return RemoteServer{}, false
	}
	srv := RemoteServer{Type: typ, URL: withoutUserinfo(u), HeaderNames: names}
	switch {
	case typ == TypeSSE:
		srv.Unsupported = SSEServer
	case !secureURL(u):
		srv.Unsupported = InsecureURL
	}
	return srv, true
}

// withoutUserinfo drops credentials embedded in a URL so that they are
// never kept or shown; an unparsable URL is kept as written.
func withoutUserinfo(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}

// secureURL: https, a host, no userinfo.
func secureURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && strings.EqualFold(u.Scheme, "https") && u.Hostname() != "" && u.User == nil && u.Opaque == ""
}

// CheckServers reports server names declared both in plugin.json (app
// servers) and in mcp.json: DUPLICATE_SERVER rejects the whole plugin.
// Either argument may be nil.
func CheckServers(p *Plugin, m *MCPConfig) []Problem {
	if p == nil || m == nil {
		return nil
	}
	app := make(map[string]bool, len(p.Servers))
	for _, s := range p.Servers {
		app[s.Name] = true
	}
	var ps problems
	for _, s := range m.Servers {
		if app[s.Name] {
			ps.add(DuplicateServer, keyPath("mcpServers", s.Name), "server name is also declared in plugin.json")
		}
	}
	return ps
}
