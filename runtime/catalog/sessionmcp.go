package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/runtime/errcode"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/platform"
)

// Limits of caller-supplied MCP servers (spec §4.8).
const (
	MaxSessionServers       = 4  // per session (one request's batch)
	MaxSessionServersPerApp = 8  // across one app's sessions
	MaxSessionServersTotal  = 64 // across the runtime
	MaxServerNameLen        = 48
	MaxServerURLLen         = 2048
	MaxServerHeaders        = 16
	MaxHeaderNameLen        = 128
	MaxHeaderValueLen       = 4096
)

// SessionServer is one entry of an ACP request's mcpServers, as the ACP
// layer hands it over. URL and header values are secrets of the caller:
// they stay in memory only, and nothing here ever prints them.
type SessionServer struct {
	// Transport is the ACP type: "http" is the only one supported;
	// "stdio", "sse", "acp" and anything else are refused.
	Transport string
	Name      string
	URL       string
	Headers   []Header
}

// Header is one HTTP header a session server is called with.
type Header struct {
	Name  string
	Value string
}

// String names the server without its URL or headers.
func (s SessionServer) String() string { return "mcp server " + s.Name }

// GoString keeps %#v from printing the URL and headers.
func (s SessionServer) GoString() string { return s.String() }

// forbiddenHeaders are set by the MCP client itself or would change the
// transport (spec §4.8).
var forbiddenHeaders = map[string]bool{
	"host": true, "content-length": true, "content-type": true, "accept": true,
	"mcp-session-id": true, "mcp-protocol-version": true, "transfer-encoding": true,
	"connection": true, "upgrade": true, "te": true, "trailer": true,
	"proxy-authorization": true, "expect": true, "origin": true,
}

// ValidateSessionServers checks a whole batch of caller-supplied MCP
// servers (spec §2.9, §4.8) and returns the first problem by index:
//
//   - more than 4 servers: quota_exceeded, details {reason: "mcp_servers", limit: 4};
//   - a type other than http: unsupported, e.g. "mcpServers[1]: sse servers
//     are not supported; use an http (Streamable HTTP) server";
//   - a bad name, a name repeated ignoring case, a bad URL (CheckServerURL)
//     or bad headers: invalid_params.
//
// Texts name the rule and the index and never echo a name, URL or header.
// The per-app and runtime-wide limits need state and are the caller's
// (see ServerQuotaError).
func ValidateSessionServers(servers []SessionServer) error {
	if len(servers) > MaxSessionServers {
		return ServerQuotaError(MaxSessionServers)
	}
	seen := make(map[string]bool, len(servers))
	for i, s := range servers {
		switch s.Transport {
		case "http":
		case "stdio", "sse", "acp":
			return errcode.Newf(errcode.Unsupported,
				"mcpServers[%d]: %s servers are not supported; use an http (Streamable HTTP) server", i, s.Transport)
		default:
			return errcode.Newf(errcode.Unsupported,
				"mcpServers[%d]: this server type is not supported; use an http (Streamable HTTP) server", i)
		}
		if !validServerName(s.Name) {
			return invalidServer(i, "name must be 1 to 48 characters of A-Z, a-z, 0-9, '_', '.', '-'")
		}
		key := strings.ToLower(s.Name)
		if seen[key] {
			return invalidServer(i, "name repeats an earlier server's name (ignoring case)")
		}
		seen[key] = true
		if err := CheckServerURL(s.URL); err != nil {
			var ue *URLError
			if errors.As(err, &ue) {
				return invalidServer(i, "url "+ue.Rule)
			}
			return invalidServer(i, "url is not allowed")
		}
		if err := checkHeaders(s.Headers); err != nil {
			return invalidServer(i, err.Error())
		}
	}
	return nil
}

// ServerQuotaError is the quota_exceeded error for session MCP servers
// over a limit (4 per session, 8 per app, 64 in total).
func ServerQuotaError(limit int) *errcode.Error {
	return errcode.Newf(errcode.QuotaExceeded, "too many MCP servers; the limit is %d", limit).
		WithDetails(map[string]any{"reason": "mcp_servers", "limit": limit})
}

func invalidServer(i int, rule string) *errcode.Error {
	return errcode.Newf(errcode.InvalidParams, "mcpServers[%d]: %s", i, rule)
}

func validServerName(s string) bool {
	if len(s) < 1 || len(s) > MaxServerNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// headerRuleError is a header rule broken at index j; it never holds the
// header itself.
type headerRuleError struct {
	j    int
	rule string
}

func (e *headerRuleError) Error() string { return fmt.Sprintf("headers[%d] %s", e.j, e.rule) }

func checkHeaders(hs []Header) error {
	if len(hs) > MaxServerHeaders {
		return fmt.Errorf("has more than %d headers", MaxServerHeaders)
	}
	seen := make(map[string]bool, len(hs))
	for j, h := range hs {
		if !isToken(h.Name) || len(h.Name) > MaxHeaderNameLen {
			return &headerRuleError{j, "name must be an HTTP token of 1 to 128 characters"}
		}
		lower := strings.ToLower(h.Name)
		if forbiddenHeaders[lower] {
			return &headerRuleError{j, "name is one the MCP client sets itself"}
		}
		if seen[lower] {
			return &headerRuleError{j, "name repeats an earlier header (ignoring case)"}
		}
		seen[lower] = true
		if len(h.Value) > MaxHeaderValueLen {
			return &headerRuleError{j, "value is longer than 4096 characters"}
		}
		for k := 0; k < len(h.Value); k++ {
			if c := h.Value[k]; c < 0x20 || c > 0x7e {
				return &headerRuleError{j, "value must be printable ASCII"}
			}
		}
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token (1*tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// URLError says which URL rule a session server's URL breaks. It never
// holds the URL.
type URLError struct{ Rule string }

func (e *URLError) Error() string { return "session mcp url: " + e.Rule }

// URL rules, the Rule texts of URLError.
const (
	RuleURLTooLong    = "is longer than 2048 characters"
	RuleURLCharacters = "contains whitespace or control characters"
	RuleURLScheme     = "must be an https URL"
	RuleURLUserinfo   = "must not contain user information"
	RuleURLHost       = "has a missing or malformed host"
	RuleURLPort       = "has an invalid port"
	RuleURLNumeric    = "has a numeric host that is not canonical dotted decimal"
	RuleURLAddress    = "points to a non-public address"
	RuleURLLocalName  = "names a local or single-label host"
	RuleURLSyntax     = "is not a valid URL"
)

// blockedHostSuffixes are local name spaces; a host equal to one or
// under one is refused.
var blockedHostSuffixes = []string{"localhost", "local", "localdomain", "internal", "lan", "home.arpa"}

// CheckServerURL applies the URL rules of spec §4.8 to a caller-supplied
// MCP server URL: https only; at most 2,048 characters; no whitespace or
// control characters; no userinfo; a numeric IPv4 host only in canonical
// dotted decimal; IPv4 and IPv6 literals must be public (PublicAddr);
// hostnames must not be single-label or under localhost, local,
// localdomain, internal, lan or home.arpa. The error is a *URLError.
// Names that pass still have to resolve to public addresses only
// (ResolvePublic) when the runtime connects.
func CheckServerURL(raw string) error {
	if utf16Len(raw) > MaxServerURLLen {
		return &URLError{RuleURLTooLong}
	}
	for i, r := range raw {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(raw[i:]); size == 1 {
				return &URLError{RuleURLCharacters}
			}
		}
		if r <= 0x20 || r == 0x7f || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return &URLError{RuleURLCharacters}
		}
	}
	const scheme = "https://"
	if len(raw) < len(scheme) || !strings.EqualFold(raw[:len(scheme)], scheme) {
		return &URLError{RuleURLScheme}
	}
	rest := raw[len(scheme):]
	authority := rest
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		authority = rest[:end]
	}
	if strings.Contains(authority, "@") {
		return &URLError{RuleURLUserinfo}
	}
	host, port, ok := splitAuthority(authority)
	if !ok {
		return &URLError{RuleURLHost}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || len(port) > 5 || port[0] < '0' || port[0] > '9' {
			return &URLError{RuleURLPort}
		}
	}
	if strings.HasPrefix(authority, "[") {
		if strings.Contains(host, "%") {
			return &URLError{RuleURLHost} // zones are never public
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return &URLError{RuleURLHost}
		}
		if !PublicAddr(a) {
			return &URLError{RuleURLAddress}
		}
	} else if err := checkHostName(host); err != nil {
		return err
	}
	// Cross-check with net/url so that the client that later dials this
	// URL cannot read a different host out of it.
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Opaque != "" {
		return &URLError{RuleURLSyntax}
	}
	if !strings.EqualFold(u.Hostname(), host) || u.Port() != port {
		return &URLError{RuleURLSyntax}
	}
	return nil
}

// splitAuthority splits host[:port] or [v6][:port].
func splitAuthority(a string) (host, port string, ok bool) {
	if a == "" {
		return "", "", false
	}
	if a[0] == '[' {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", false
		}
		host, after := a[1:end], a[end+1:]
		if after == "" {
			return host, "", host != ""
		}
		if after[0] != ':' || len(after) == 1 {
			return "", "x", true // a port rule violation
		}
		return host, after[1:], host != ""
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 {
		if i == len(a)-1 {
			return a[:i], "x", true
		}
		return a[:i], a[i+1:], a[:i] != ""
	}
	return a, "", true
}

func checkHostName(host string) error {
	h := strings.ToLower(host)
	h = strings.TrimSuffix(h, ".") // a fully qualified name is the same host
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return &URLError{RuleURLHost}
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return &URLError{RuleURLHost}
		}
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if len(l) > 63 {
			return &URLError{RuleURLHost}
		}
	}
	last := labels[len(labels)-1]
	if isNumericLabel(last) {
		a, ok := canonicalIPv4(labels)
		if !ok {
			return &URLError{RuleURLNumeric}
		}
		if !PublicAddr(a) {
			return &URLError{RuleURLAddress}
		}
		return nil
	}
	if len(labels) == 1 {
		return &URLError{RuleURLLocalName}
	}
	for _, s := range blockedHostSuffixes {
		if h == s || strings.HasSuffix(h, "."+s) {
			return &URLError{RuleURLLocalName}
		}
	}
	return nil
}

// isNumericLabel: a last label of decimal digits or 0x-hex makes the
// whole host a number in URL parsers (WHATWG), whatever the other labels.
func isNumericLabel(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") {
		for i := 2; i < len(l); i++ {
			c := l[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// canonicalIPv4 accepts exactly a.b.c.d with each part 0..255 in decimal
// without leading zeros.
func canonicalIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, l := range labels {
		if l == "" || len(l) > 3 || (len(l) > 1 && l[0] == '0') {
			return netip.Addr{}, false
		}
		n := 0
		for j := 0; j < len(l); j++ {
			if l[j] < '0' || l[j] > '9' {
				return netip.Addr{}, false
			}
			n = n*10 + int(l[j]-'0')
		}
		if n > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

var blockedV4 = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
	"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/3",
)

var (
	globalV6  = netip.MustParsePrefix("2000::/3")
	blockedV6 = mustPrefixes("2001::/32", "2001:db8::/32", "3fff::/20", "2001:2::/48")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// PublicAddr reports whether a session MCP server may be reached at a
// (spec §4.8). IPv4: everything but 0/8, 10/8, 100.64/10, 127/8,
// 169.254/16, 172.16/12, 192.0.0/24, 192.0.2/24, 192.88.99/24,
// 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24 and 224/3. IPv6:
// only 2000::/3, minus 2001::/32, 2001:db8::/32, 3fff::/20 and
// 2001:2::/48; ::ffff:a.b.c.d, 64:ff9b::/96 and 2002::/16 are judged by
// the IPv4 address they embed. Zoned addresses are never public.
func PublicAddr(a netip.Addr) bool {
	if a.IsLoopback() && faultinject.Enabled && faultinject.Active(faultinject.SessionMCPLoopback) {
		return true // injected fault
	}
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.Is4() {
		for _, p := range blockedV4 {
			if p.Contains(a) {
				return false
			}
		}
		return true
	}
	if a.Is4In6() {
		return PublicAddr(a.Unmap())
	}
	b := a.As16()
	if nat64.Contains(a) {
		return PublicAddr(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if sixToFour.Contains(a) {
		return PublicAddr(netip.AddrFrom4([4]byte(b[2:6])))
	}
	if !globalV6.Contains(a) {
		return false
	}
	for _, p := range blockedV6 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// ErrNonPublicAddress: a session server's host resolved to (or a dial
// reached) an address PublicAddr refuses.
var ErrNonPublicAddress = errors.New("session mcp server address is not public")

// LookupFunc resolves a host name, like (*net.Resolver).LookupNetIP.
type LookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// ResolvePublic resolves host with lookup (nil = the platform's resolver:
// netd on Android, net.DefaultResolver elsewhere)
// and refuses the whole answer when any address is not public, so a name
// that mixes public and private answers cannot be used (spec §4.8). IP
// literals are judged directly.
func ResolvePublic(ctx context.Context, lookup LookupFunc, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if !PublicAddr(a) {
			return nil, fmt.Errorf("resolve: %w", ErrNonPublicAddress)
		}
		return []netip.Addr{a}, nil
	}
	if lookup == nil {
		lookup = platform.Current().LookupNetIP
	}
	addrs, err := lookup(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve: %w", err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve: no addresses: %w", ErrNonPublicAddress)
	}
	for _, a := range addrs {
		if !PublicAddr(a) {
			return nil, fmt.Errorf("resolve: %w", ErrNonPublicAddress)
		}
	}
	return addrs, nil
}

// DialControl is a net.Dialer.Control hook that refuses to connect to a
// non-public address. It checks the address actually dialed, so a DNS
// answer that changes between resolution and connection (rebinding)
// cannot reach a private address.
func DialControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", network, ErrNonPublicAddress)
	}
	if !PublicAddr(ap.Addr()) {
		return fmt.Errorf("dial %s: %w", network, ErrNonPublicAddress)
	}
	return nil
}
