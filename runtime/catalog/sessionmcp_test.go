package catalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// TestPublicAddrEdges walks the first and last address of every blocked
// range of spec §4.8 and the public neighbours on both sides.
func TestPublicAddrEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		public bool
	}{
		// 0.0.0.0/8
		{"0.0.0.0", false}, {"0.255.255.255", false}, {"1.0.0.0", true},
		// 10/8
		{"9.255.255.255", true}, {"10.0.0.0", false}, {"10.255.255.255", false}, {"11.0.0.0", true},
		// 100.64/10
		{"100.63.255.255", true}, {"100.64.0.0", false}, {"100.127.255.255", false}, {"100.128.0.0", true},
		// 127/8
		{"126.255.255.255", true}, {"127.0.0.0", false}, {"127.0.0.1", false}, {"127.255.255.255", false}, {"128.0.0.0", true},
		// 169.254/16
		{"169.253.255.255", true}, {"169.254.0.0", false}, {"169.254.255.255", false}, {"169.255.0.0", true},
		// 172.16/12
		{"172.15.255.255", true}, {"172.16.0.0", false}, {"172.31.255.255", false}, {"172.32.0.0", true},
		// 192.0.0/24
		{"191.255.255.255", true}, {"192.0.0.0", false}, {"192.0.0.255", false}, {"192.0.1.0", true},
		// 192.0.2/24
		{"192.0.1.255", true}, {"192.0.2.0", false}, {"192.0.2.255", false}, {"192.0.3.0", true},
		// 192.88.99/24
		{"192.88.98.255", true}, {"192.88.99.0", false}, {"192.88.99.255", false}, {"192.88.100.0", true},
		// 192.168/16
		{"192.167.255.255", true}, {"192.168.0.0", false}, {"192.168.255.255", false}, {"192.169.0.0", true},
		// 198.18/15
		{"198.17.255.255", true}, {"198.18.0.0", false}, {"198.19.255.255", false}, {"198.20.0.0", true},
		// 198.51.100/24
		{"198.51.99.255", true}, {"198.51.100.0", false}, {"198.51.100.255", false}, {"198.51.101.0", true},
		// 203.0.113/24
		{"203.0.112.255", true}, {"203.0.113.0", false}, {"203.0.113.255", false}, {"203.0.114.0", true},
		// ≥ 224
		{"223.255.255.255", true}, {"224.0.0.0", false}, {"239.255.255.250", false}, {"255.255.255.255", false},
		{"8.8.8.8", true}, {"1.1.1.1", true},

		// IPv6: only 2000::/3
		{"::", false}, {"::1", false}, {"fe80::1", false}, {"fc00::1", false}, {"fd12:3456::1", false}, {"ff02::1", false},
		{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"2000::", true},
		{"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"4000::", false},
		// 2001::/32 (Teredo)
		{"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"2001::", false}, {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"2001:1::", true},
		// 2001:2::/48
		{"2001:1:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"2001:2::", false}, {"2001:2:0:ffff:ffff:ffff:ffff:ffff", false}, {"2001:2:1::", true},
		// 2001:db8::/32
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"2001:db8::", false}, {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"2001:db9::", true},
		// 3fff::/20
		{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"3fff::", false}, {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"3fff:1000::", true},
		{"2001:4860:4860::8888", true}, {"2606:4700::1111", true},
		// Embedded IPv4: ::ffff:v4, 64:ff9b::/96, 2002::/16.
		{"::ffff:8.8.8.8", true}, {"::ffff:10.0.0.1", false}, {"::ffff:127.0.0.1", false},
		{"64:ff9b::8.8.8.8", true}, {"64:ff9b::127.0.0.1", false}, {"64:ff9b::c0a8:101", false},
		{"64:ff9b:1::8.8.8.8", false}, // local-use NAT64 is outside 2000::/3
		{"2002:808:808::1", true}, {"2002:a00:1::1", false}, {"2002:c0a8:101::1", false}, {"2002:7f00:1::", false},
		{"2002:e000::", false},
		{"::8.8.8.8", false}, // IPv4-compatible (deprecated): not 2000::/3
		// Zones are never public.
		{"fe80::1%eth0", false}, {"2001:4860:4860::8888%1", false},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := PublicAddr(a); got != tt.public {
			t.Errorf("PublicAddr(%s) = %v, want %v", tt.addr, got, tt.public)
		}
		if a.Zone() != "" {
			continue
		}
		// The same verdict reaches CheckServerURL for literals.
		host := tt.addr
		if a.Is6() {
			host = "[" + host + "]"
		}
		err := CheckServerURL("https://" + host + "/mcp")
		if tt.public && err != nil {
			t.Errorf("CheckServerURL(%s) = %v, want ok", host, err)
		}
		if !tt.public && !isRule(err, RuleURLAddress) {
			t.Errorf("CheckServerURL(%s) = %v, want %q", host, err, RuleURLAddress)
		}
	}
	if PublicAddr(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

func isRule(err error, rule string) bool {
	var ue *URLError
	return errors.As(err, &ue) && ue.Rule == rule
}

func TestCheckServerURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		rule string // "" = allowed
	}{
		{"https://mcp.example.com/mcp", ""},
		{"HTTPS://MCP.Example.COM/mcp", ""},
		{"https://mcp.example.com", ""},
		{"https://mcp.example.com:8443/mcp?x=1#frag", ""},
		{"https://mcp.example.com.:443/", ""}, // fully qualified
		{"https://x_y.example.com/", ""},
		{"https://8.8.8.8/", ""},
		{"https://8.8.8.8./", ""},
		{"https://[2001:4860:4860::8888]:443/mcp", ""},
		{"https://a.b/" + strings.Repeat("p", MaxServerURLLen-len("https://a.b/")), ""},
		{"https://a.b/" + strings.Repeat("p", MaxServerURLLen-len("https://a.b/")+1), RuleURLTooLong},

		{"http://mcp.example.com/", RuleURLScheme},
		{"ftp://mcp.example.com/", RuleURLScheme},
		{"https:/mcp.example.com/", RuleURLScheme},
		{"mcp.example.com", RuleURLScheme},
		{"", RuleURLScheme},

		{" https://mcp.example.com/", RuleURLCharacters},
		{"https://mcp.example.com/a b", RuleURLCharacters},
		{"https://mcp.example.com/\tx", RuleURLCharacters},
		{"https://mcp.example.com/\n", RuleURLCharacters},
		{"https://mcp.example.com/\x7f", RuleURLCharacters},
		{"https://mcp.example.com/\u0085", RuleURLCharacters},
		{"https://mcp.example.com/\u00a0", RuleURLCharacters},
		{"https://mcp.example.com/\u3000", RuleURLCharacters},
		{"https://mcp.example.com/\u200b", RuleURLCharacters},
		{"https://mcp.example.com/\u202e", RuleURLCharacters},
		{"https://mcp.example.com/\xff", RuleURLCharacters},

		{"https://user:pw@mcp.example.com/", RuleURLUserinfo},
		{"https://@mcp.example.com/", RuleURLUserinfo},
		{"https://mcp.example.com@evil.example/", RuleURLUserinfo},

		{"https://", RuleURLHost},
		{"https:///mcp", RuleURLHost},
		{"https://:443/", RuleURLHost},
		{"https://[2001:4860::8888/", RuleURLHost},
		{"https://[]/", RuleURLHost},
		{"https://[8.8.8.8]/", RuleURLHost},
		{"https://[2001:4860::8888%25eth0]/", RuleURLHost},
		{"https://exa%6dple.com/", RuleURLHost},
		{"https://例え.jp/", RuleURLHost},
		{"https://a..example.com/", RuleURLHost},
		{"https://.example.com/", RuleURLHost},
		{"https://" + strings.Repeat("a", 64) + ".example.com/", RuleURLHost},

		{"https://mcp.example.com:0/", RuleURLPort},
		{"https://mcp.example.com:65536/", RuleURLPort},
		{"https://mcp.example.com:/", RuleURLPort},
		{"https://mcp.example.com:+443/", RuleURLPort},
		{"https://mcp.example.com:4a/", RuleURLPort},
		{"https://[2001:4860::8888]x/", RuleURLPort},
		{"https://[2001:4860::8888]:/", RuleURLPort},

		{"https://127.1/", RuleURLNumeric},
		{"https://0x7f.0.0.1/", RuleURLNumeric},
		{"https://0x7f000001/", RuleURLNumeric},
		{"https://2130706433/", RuleURLNumeric},
		{"https://017.0.0.1/", RuleURLNumeric},
		{"https://08.8.8.8/", RuleURLNumeric},
		{"https://1.2.3.4.5/", RuleURLNumeric},
		{"https://256.1.1.1/", RuleURLNumeric},
		{"https://example.123/", RuleURLNumeric},
		{"https://1.2.3.0x4/", RuleURLNumeric},

		{"https://127.0.0.1:8443/", RuleURLAddress},
		{"https://[::1]/", RuleURLAddress},
		{"https://[::ffff:127.0.0.1]/", RuleURLAddress},
		{"https://[::ffff:8.8.8.8]/", ""},

		{"https://localhost/", RuleURLLocalName},
		{"https://LOCALHOST:443/", RuleURLLocalName},
		{"https://localhost./", RuleURLLocalName},
		{"https://api.localhost/", RuleURLLocalName},
		{"https://printer.local/", RuleURLLocalName},
		{"https://a.b.localdomain/", RuleURLLocalName},
		{"https://metadata.google.internal/", RuleURLLocalName},
		{"https://nas.lan/", RuleURLLocalName},
		{"https://router.home.arpa/", RuleURLLocalName},
		{"https://home.arpa/", RuleURLLocalName},
		{"https://intranet/", RuleURLLocalName},
		{"https://intranet./", RuleURLLocalName},
		{"https://local.example.com/", ""},
		{"https://notlan.example/", ""},
		{"https://x.xlan/", ""},

		{"https://example.com/%zz", RuleURLSyntax},
	}
	for _, tt := range tests {
		err := CheckServerURL(tt.url)
		if tt.rule == "" {
			if err != nil {
				t.Errorf("CheckServerURL(%q) = %v, want ok", tt.url, err)
			}
			continue
		}
		if !isRule(err, tt.rule) {
			t.Errorf("CheckServerURL(%q) = %v, want %q", tt.url, err, tt.rule)
		}
	}
}

func httpServer(name, u string, hs ...Header) SessionServer {
	return SessionServer{Transport: "http", Name: name, URL: u, Headers: hs}
}

func TestValidateSessionServers(t *testing.T) {
	t.Parallel()
	ok := "https://mcp.example.com/mcp"
	many := func(n int) []Header {
		out := make([]Header, n)
		for i := range out {
			out[i] = Header{Name: fmt.Sprintf("X-H%d", i), Value: "v"}
		}
		return out
	}
	type want struct {
		code errcode.Code
		text string
	}
	tests := []struct {
		name    string
		servers []SessionServer
		want    *want
	}{
		{"none", nil, nil},
		{"four", []SessionServer{httpServer("a", ok), httpServer("b", ok), httpServer("c", ok), httpServer("d", ok)}, nil},
		{"five", []SessionServer{httpServer("a", ok), httpServer("b", ok), httpServer("c", ok), httpServer("d", ok), httpServer("e", ok)},
			&want{errcode.QuotaExceeded, "too many MCP servers; the limit is 4"}},
		{"sse", []SessionServer{httpServer("a", ok), {Transport: "sse", Name: "b", URL: ok}},
			&want{errcode.Unsupported, "mcpServers[1]: sse servers are not supported; use an http (Streamable HTTP) server"}},
		{"stdio", []SessionServer{{Transport: "stdio", Name: "b"}},
			&want{errcode.Unsupported, "mcpServers[0]: stdio servers are not supported; use an http (Streamable HTTP) server"}},
		{"acp", []SessionServer{{Transport: "acp", Name: "b"}},
			&want{errcode.Unsupported, "mcpServers[0]: acp servers are not supported; use an http (Streamable HTTP) server"}},
		{"unknown type", []SessionServer{{Transport: "HTTP", Name: "b", URL: ok}},
			&want{errcode.Unsupported, "mcpServers[0]: this server type is not supported; use an http (Streamable HTTP) server"}},
		{"name 48", []SessionServer{httpServer(strings.Repeat("n", 48), ok)}, nil},
		{"name chars", []SessionServer{httpServer("A-z_0.9", ok)}, nil},
		{"name 49", []SessionServer{httpServer(strings.Repeat("n", 49), ok)},
			&want{errcode.InvalidParams, "mcpServers[0]: name must be 1 to 48 characters of A-Z, a-z, 0-9, '_', '.', '-'"}},
		{"name empty", []SessionServer{httpServer("", ok)},
			&want{errcode.InvalidParams, "mcpServers[0]: name must be 1 to 48 characters of A-Z, a-z, 0-9, '_', '.', '-'"}},
		{"name space", []SessionServer{httpServer("my docs", ok)},
			&want{errcode.InvalidParams, "mcpServers[0]: name must be 1 to 48 characters of A-Z, a-z, 0-9, '_', '.', '-'"}},
		{"name twice ignoring case", []SessionServer{httpServer("Docs", ok), httpServer("docs", ok)},
			&want{errcode.InvalidParams, "mcpServers[1]: name repeats an earlier server's name (ignoring case)"}},
		{"url", []SessionServer{httpServer("a", ok), httpServer("b", "https://10.1.2.3/")},
			&want{errcode.InvalidParams, "mcpServers[1]: url points to a non-public address"}},
		{"16 headers", []SessionServer{httpServer("a", ok, many(16)...)}, nil},
		{"17 headers", []SessionServer{httpServer("a", ok, many(17)...)},
			&want{errcode.InvalidParams, "mcpServers[0]: has more than 16 headers"}},
		{"header name not a token", []SessionServer{httpServer("a", ok, Header{"X Bad", "v"})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[0] name must be an HTTP token of 1 to 128 characters"}},
		{"header name empty", []SessionServer{httpServer("a", ok, Header{"", "v"})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[0] name must be an HTTP token of 1 to 128 characters"}},
		{"header name 128", []SessionServer{httpServer("a", ok, Header{strings.Repeat("h", 128), "v"})}, nil},
		{"header name 129", []SessionServer{httpServer("a", ok, Header{strings.Repeat("h", 129), "v"})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[0] name must be an HTTP token of 1 to 128 characters"}},
		{"header token chars", []SessionServer{httpServer("a", ok, Header{"X-A!#$%&'*+.^_`|~9", "v"})}, nil},
		{"duplicate header", []SessionServer{httpServer("a", ok, Header{"Authorization", "Bearer x"}, Header{"authorization", "y"})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[1] name repeats an earlier header (ignoring case)"}},
		{"value 4096", []SessionServer{httpServer("a", ok, Header{"X", strings.Repeat("v", 4096)})}, nil},
		{"value empty", []SessionServer{httpServer("a", ok, Header{"X", ""})}, nil},
		{"value 4097", []SessionServer{httpServer("a", ok, Header{"X", strings.Repeat("v", 4097)})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[0] value is longer than 4096 characters"}},
		{"value newline", []SessionServer{httpServer("a", ok, Header{"X", "a\r\nHost: evil"})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[0] value must be printable ASCII"}},
		{"value non-ASCII", []SessionServer{httpServer("a", ok, Header{"X", "café"})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[0] value must be printable ASCII"}},
		{"value tab", []SessionServer{httpServer("a", ok, Header{"X", "a\tb"})},
			&want{errcode.InvalidParams, "mcpServers[0]: headers[0] value must be printable ASCII"}},
	}
	for name := range forbiddenHeaders {
		for _, spelled := range []string{name, strings.ToUpper(name)} {
			tests = append(tests, struct {
				name    string
				servers []SessionServer
				want    *want
			}{"forbidden " + spelled, []SessionServer{httpServer("a", ok, Header{"X-Ok", "1"}, Header{spelled, "v"})},
				&want{errcode.InvalidParams, "mcpServers[0]: headers[1] name is one the MCP client sets itself"}})
		}
	}
	for _, tt := range tests {
		err := ValidateSessionServers(tt.servers)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var e *errcode.Error
		if !errors.As(err, &e) || e.Code != tt.want.code || e.Text != tt.want.text {
			t.Errorf("%s: err = %v, want %s: %s", tt.name, err, tt.want.code, tt.want.text)
		}
		if e != nil && e.Code == errcode.QuotaExceeded && (e.Details["reason"] != "mcp_servers" || e.Details["limit"] != 4) {
			t.Errorf("%s: details %v", tt.name, e.Details)
		}
	}
}

// TestSessionServersNeverEcho: no error text or String form contains a
// URL, a header name or a header value.
func TestSessionServersNeverEcho(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3tTOKEN"
	batches := [][]SessionServer{
		{httpServer("a", "https://"+secret+".localhost/")},
		{httpServer("a", "https://"+secret+"@mcp.example.com/")},
		{httpServer("a", "http://mcp.example.com/"+secret)},
		{httpServer("a", "https://mcp.example.com/", Header{"Authorization", "Bearer " + secret + "\n"})},
		{httpServer("a", "https://mcp.example.com/", Header{secret + " x", "v"})},
		{httpServer(secret+" name", "https://mcp.example.com/")},
	}
	for i, b := range batches {
		err := ValidateSessionServers(b)
		if err == nil {
			t.Fatalf("batch %d accepted", i)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("batch %d: %v echoes the secret", i, err)
		}
		if s := fmt.Sprintf("%v %+v %#v %s", b[0], b[0], b[0], b[0]); strings.Contains(s, secret) && b[0].Name == "a" {
			t.Errorf("batch %d: formatting prints the secret: %s", i, s)
		}
	}
}

func TestResolvePublic(t *testing.T) {
	t.Parallel()
	lookup := func(answers map[string][]string) LookupFunc {
		return func(_ context.Context, network, host string) ([]netip.Addr, error) {
			a, ok := answers[host]
			if !ok {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			var out []netip.Addr
			for _, s := range a {
				out = append(out, netip.MustParseAddr(s))
			}
			return out, nil
		}
	}(map[string][]string{
		"public.example":  {"8.8.8.8", "2001:4860:4860::8888"},
		"mixed.example":   {"8.8.8.8", "10.0.0.1"},
		"rebind.example":  {"127.0.0.1"},
		"mapped.example":  {"::ffff:192.168.1.1"},
		"nothing.example": {},
	})
	ctx := context.Background()
	tests := []struct {
		host    string
		wantErr error
		n       int
	}{
		{"public.example", nil, 2},
		{"8.8.8.8", nil, 1},
		{"[2001:4860:4860::8888]", nil, 1},
		{"mixed.example", ErrNonPublicAddress, 0},
		{"rebind.example", ErrNonPublicAddress, 0},
		{"mapped.example", ErrNonPublicAddress, 0},
		{"nothing.example", ErrNonPublicAddress, 0},
		{"10.0.0.1", ErrNonPublicAddress, 0},
	}
	for _, tt := range tests {
		got, err := ResolvePublic(ctx, lookup, tt.host)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) || got != nil {
				t.Errorf("ResolvePublic(%s) = %v, %v, want %v", tt.host, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != tt.n {
			t.Errorf("ResolvePublic(%s) = %v, %v", tt.host, got, err)
		}
	}
	_, err := ResolvePublic(ctx, lookup, "missing.example")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || errors.Is(err, ErrNonPublicAddress) {
		t.Errorf("lookup failure: %v", err)
	}
}

func TestDialControl(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"8.8.8.8:443": true, "[2001:4860:4860::8888]:443": true,
		"10.0.0.1:443": false, "127.0.0.1:8080": false, "[::1]:443": false, "[fe80::1%eth0]:443": false, "bogus": false,
	} {
		err := DialControl("tcp", addr, nil)
		if ok != (err == nil) || (!ok && !errors.Is(err, ErrNonPublicAddress)) {
			t.Errorf("DialControl(%s) = %v", addr, err)
		}
	}
	// A real dial to loopback is refused before connecting.
	d := net.Dialer{Control: DialControl}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if c, err := d.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("dial to loopback succeeded")
	} else if !errors.Is(err, ErrNonPublicAddress) {
		t.Fatalf("dial error %v", err)
	}
}

// FuzzCheckServerURL: never panics; an accepted URL is https, parses
// with net/url to the same host, has no userinfo, and its host is a
// public literal or a multi-label name outside the local suffixes; an
// error never contains the input.
func FuzzCheckServerURL(f *testing.F) {
	for _, s := range []string{
		"https://mcp.example.com/mcp", "https://8.8.8.8/", "https://[2001:4860::8888]:443/", "https://127.1/",
		"https://user@x.example/", "https://localhost/", "https://[::ffff:10.0.0.1]/", "https://x.example:65535/",
		"HTTPS://A.B/%41", "https://0x7f.1/", "https://a.b.home.arpa./", "https://[fe80::1%25en0]/", "https://a.b/\u202e",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := CheckServerURL(raw)
		if err != nil {
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("error of type %T", err)
			}
			if len(raw) > 12 && strings.Contains(err.Error(), raw) {
				t.Fatalf("error echoes input: %v", err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || !strings.EqualFold(u.Scheme, "https") || u.User != nil || u.Hostname() == "" {
			t.Fatalf("accepted %q: %v %+v", raw, perr, u)
		}
		host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
		if a, err := netip.ParseAddr(host); err == nil {
			if !PublicAddr(a) {
				t.Fatalf("accepted non-public literal %q", raw)
			}
			return
		}
		if !strings.Contains(host, ".") {
			t.Fatalf("accepted single-label host %q", raw)
		}
		for _, s := range blockedHostSuffixes {
			if host == s || strings.HasSuffix(host, "."+s) {
				t.Fatalf("accepted local host %q", raw)
			}
		}
		for _, r := range raw {
			if r <= 0x20 || r == 0x7f {
				t.Fatalf("accepted control/space in %q", raw)
			}
		}
	})
}
