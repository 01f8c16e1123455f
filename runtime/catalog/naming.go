package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest final model tool name (spec §4.11).
const MaxNameLen = 64

// SuffixLengths are the hash suffix lengths tried, in order (spec §7).
var SuffixLengths = [...]int{6, 8, 12, 16, 24}

// Prefixes of final model names. A plugin tool's name always starts with
// PluginPrefix and a session tool's with SessionPrefix, so the two kinds
// (and the built-in read_skill) can never collide.
const (
	PluginPrefix  = "mcp__"
	SessionPrefix = "ses__"
	ACIPrefix     = "aci__"
)

// Errors of Assign and AssignSession, matched with errors.Is.
var (
	// ErrEmptySegment: a plugin, server or tool name is empty.
	ErrEmptySegment = errors.New("empty name segment")
	// ErrDuplicateTool: the same id appears twice in one catalog.
	ErrDuplicateTool = errors.New("duplicate tool id")
	// ErrUnresolvedCollision: names still collide after the longest
	// suffix (24 hex chars of SHA-256), which means a hash collision.
	ErrUnresolvedCollision = errors.New("tool names still collide after the longest suffix")
)

// ToolID names a plugin tool by its raw parts: the plugin.json name, the
// server name (key under mcpServers) and the raw MCP tool name. All three
// are non-empty. It is also the key of the user's approval policy.
type ToolID struct {
	Plugin string `json:"plugin"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

func (id ToolID) String() string { return id.Plugin + "/" + id.Server + "/" + id.Tool }

// SessionToolID names a tool of a caller-supplied (session) MCP server.
type SessionToolID struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

func (id SessionToolID) String() string { return id.Server + "/" + id.Tool }

// ACIToolID names a capability of an app's ACI service: the package, the
// service's server name (app.json) and the capability id.
type ACIToolID struct {
	Package    string `json:"package"`
	Service    string `json:"service"`
	Capability string `json:"capability"`
}

func (id ACIToolID) String() string { return id.Package + "/" + id.Service + "/" + id.Capability }

// Sanitize maps a name segment to [A-Za-z0-9_-]: every UTF-16 code unit
// that is not ASCII a-z, A-Z, 0-9, '_' or '-' becomes one '_'. So a CJK
// character gives one '_' and an astral character (a surrogate pair in
// UTF-16, e.g. an emoji) gives two. Nothing is ever deleted. An invalid
// UTF-8 byte counts as one code unit. The empty segment becomes "_".
func Sanitize(segment string) string {
	if segment == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(segment))
	for i := 0; i < len(segment); {
		c := segment[i]
		if c < utf8.RuneSelf {
			if isNameByte(c) {
				b.WriteByte(c)
			} else {
				b.WriteByte('_')
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(segment[i:])
		if r > 0xFFFF {
			b.WriteString("__")
		} else {
			b.WriteByte('_')
		}
		i += size
	}
	return b.String()
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ValidName reports whether s matches ^[A-Za-z0-9_-]{1,64}$, the shape of
// every final model tool name.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// namer is the algorithm of spec §7, shared by plugin and session tools:
// they differ only in the prefix and the number of segments.
type namer[ID comparable] struct {
	plain    func(ID) string
	identity func(ID) string
	valid    func(ID) bool
}

var pluginNamer = namer[ToolID]{
	plain: func(id ToolID) string {
		return PluginPrefix + Sanitize(id.Plugin) + "__" + Sanitize(id.Server) + "__" + Sanitize(id.Tool)
	},
	identity: func(id ToolID) string { return id.Plugin + "\x00" + id.Server + "\x00" + id.Tool },
	valid:    func(id ToolID) bool { return id.Plugin != "" && id.Server != "" && id.Tool != "" },
}

var sessionNamer = namer[SessionToolID]{
	plain: func(id SessionToolID) string {
		return SessionPrefix + Sanitize(id.Server) + "__" + Sanitize(id.Tool)
	},
	identity: func(id SessionToolID) string { return id.Server + "\x00" + id.Tool },
	valid:    func(id SessionToolID) bool { return id.Server != "" && id.Tool != "" },
}

var aciNamer = namer[ACIToolID]{
	plain: func(id ACIToolID) string {
		return ACIPrefix + Sanitize(id.Package) + "__" + Sanitize(id.Service) + "__" + Sanitize(id.Capability)
	},
	identity: func(id ACIToolID) string { return id.Package + "\x00" + id.Service + "\x00" + id.Capability },
	valid:    func(id ACIToolID) bool { return id.Package != "" && id.Service != "" && id.Capability != "" },
}

// hash is the lowercase hex SHA-256 of the raw identity's UTF-8 bytes.
func (n namer[ID]) hash(id ID) string {
	sum := sha256.Sum256([]byte(n.identity(id)))
	return hex.EncodeToString(sum[:])
}

// fit keeps name when it fits and no suffix is forced; otherwise it
// truncates name to 64-1-L chars and appends "_" and L hex chars.
// Sanitized names are ASCII, so bytes are chars here.
func fit(name, hash string, l int, force bool) string {
	if !force && len(name) <= MaxNameLen {
		return name
	}
	keep := MaxNameLen - 1 - l
	if len(name) > keep {
		name = name[:keep]
	}
	return name + "_" + hash[:l]
}

func (n namer[ID]) nameOf(id ID) string {
	plain := n.plain(id)
	if len(plain) <= MaxNameLen {
		return plain
	}
	return fit(plain, n.hash(id), SuffixLengths[0], false)
}

func (n namer[ID]) candidates(id ID) []string {
	plain, h := n.plain(id), n.hash(id)
	out := make([]string, 0, 1+len(SuffixLengths))
	out = append(out, fit(plain, h, SuffixLengths[0], false))
	for _, l := range SuffixLengths {
		out = append(out, fit(plain, h, l, true))
	}
	return out
}

func (n namer[ID]) assign(ids []ID) (map[ID]string, error) {
	out := make(map[ID]string, len(ids))
	type info struct {
		plain, hash string
	}
	infos := make(map[ID]info, len(ids))
	groups := make(map[string][]ID, len(ids))
	for _, id := range ids {
		if !n.valid(id) {
			return nil, fmt.Errorf("assign %v: %w", id, ErrEmptySegment)
		}
		if _, dup := infos[id]; dup {
			return nil, fmt.Errorf("assign %v: %w", id, ErrDuplicateTool)
		}
		inf := info{plain: n.plain(id), hash: n.hash(id)}
		infos[id] = inf
		base := fit(inf.plain, inf.hash, SuffixLengths[0], false)
		groups[base] = append(groups[base], id)
	}
	// taken holds every name already final: unique base names first, then
	// each round's settled names.
	taken := make(map[string]bool, len(ids))
	var pending []ID
	for base, g := range groups {
		if len(g) == 1 {
			out[g[0]] = base
			taken[base] = true
		} else {
			pending = append(pending, g...)
		}
	}
	for _, l := range SuffixLengths {
		if len(pending) == 0 {
			break
		}
		cand := make(map[ID]string, len(pending))
		count := make(map[string]int, len(pending))
		for _, id := range pending {
			inf := infos[id]
			c := fit(inf.plain, inf.hash, l, true)
			cand[id] = c
			count[c]++
		}
		var next []ID
		for _, id := range pending {
			c := cand[id]
			if count[c] == 1 && !taken[c] {
				out[id] = c
			} else {
				next = append(next, id)
			}
		}
		for _, id := range pending {
			if c, ok := out[id]; ok {
				taken[c] = true
			}
		}
		pending = next
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("assign %v: %w", pending[0], ErrUnresolvedCollision)
	}
	return out, nil
}

// NameOf is the final name of a plugin tool taken alone (spec §7
// nameOf): the plain name, or, if longer than 64 chars, its first 57
// chars plus "_" and 6 hex chars. Inside a catalog a name can change
// because of collisions; use Assign for that.
func NameOf(id ToolID) string { return pluginNamer.nameOf(id) }

// Candidates lists what a plugin tool's final name can be: NameOf first,
// then the forced-suffix names for suffix lengths 6, 8, 12, 16 and 24.
// Assign always picks one of these.
func Candidates(id ToolID) []string { return pluginNamer.candidates(id) }

// Assign gives every plugin tool of a catalog its final model name (spec
// §7 assign). Tools whose NameOf is unique keep it; all members of a
// colliding group get a forced hash suffix, lengthened until unique. The
// result depends only on the set of ids. Errors: ErrEmptySegment,
// ErrDuplicateTool, ErrUnresolvedCollision.
func Assign(ids []ToolID) (map[ToolID]string, error) { return pluginNamer.assign(ids) }

// SessionNameOf is NameOf for a session tool: "ses__<server>__<tool>".
func SessionNameOf(id SessionToolID) string { return sessionNamer.nameOf(id) }

// SessionCandidates is Candidates for a session tool.
func SessionCandidates(id SessionToolID) []string { return sessionNamer.candidates(id) }

// AssignSession is Assign for the tools of one session's caller-supplied
// MCP servers; identity is server + NUL + tool. The results always start
// with "ses__", so never with "mcp__" and never equal "read_skill".
func AssignSession(ids []SessionToolID) (map[SessionToolID]string, error) {
	return sessionNamer.assign(ids)
}

// ACINameOf is NameOf for an ACI capability:
// "aci__<package>__<service>__<capability>".
func ACINameOf(id ACIToolID) string { return aciNamer.nameOf(id) }

// AssignACI is Assign for ACI capabilities; identity is package + NUL +
// service + NUL + capability. The results always start with "aci__", so
// they never meet plugin, session or builtin names.
func AssignACI(ids []ACIToolID) (map[ACIToolID]string, error) { return aciNamer.assign(ids) }
