package platform

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentoslab/agentlab/runtime/platform/dnsproxyd"
)

// maxFallbackServers bounds the fallback setting.
const maxFallbackServers = 4

// resolver resolves the way bionic does on Android: the hosts file, then
// netd; then, beyond bionic, the configured fallback servers.
type resolver struct {
	hosts    string
	netd     *dnsproxyd.Client
	fallback []netip.AddrPort
}

// parseServers reads IP or IP:port entries (port 53 by default).
func parseServers(list []string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	var bad []string
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if ap, err := netip.ParseAddrPort(s); err == nil {
			out = append(out, ap)
		} else if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
			out = append(out, netip.AddrPortFrom(a, 53))
		} else {
			bad = append(bad, s)
		}
	}
	if len(out) > maxFallbackServers {
		out = out[:maxFallbackServers]
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%s: %q is not IP[:port]", PropFallbackDNS, strings.Join(bad, ","))
	}
	return out, nil
}

// LookupNetIP resolves host like (*net.Resolver).LookupNetIP ("ip",
// "ip4" or "ip6"): off Android with Go's resolver; on Android through the
// hosts file, netd and the fallback servers. Errors are *net.DNSError.
func (p *Platform) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if p.resolver == nil {
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return filterFamily(network, []netip.Addr{a}), nil
	}
	addrs, err := p.resolver.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap() // Go's resolver maps IPv4 answers into IPv6
	}
	if addrs = filterFamily(network, addrs); len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no " + network + " address", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

func filterFamily(network string, addrs []netip.Addr) []netip.Addr {
	want4, want6 := true, true
	switch network {
	case "ip4", "tcp4", "udp4":
		want6 = false
	case "ip6", "tcp6", "udp6":
		want4 = false
	}
	var out []netip.Addr
	for _, a := range addrs {
		if a.Unmap().Is4() && want4 || !a.Unmap().Is4() && want6 {
			out = append(out, a)
		}
	}
	return out
}

func (r *resolver) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if addrs := lookupHostsFile(r.hosts, host); len(addrs) > 0 {
		return addrs, nil
	}
	addrs, netdErr := r.netd.LookupNetIP(ctx, host)
	if netdErr == nil {
		return addrs, nil
	}
	if ctx.Err() != nil {
		return nil, &net.DNSError{Err: ctx.Err().Error(), Name: host, Server: "dnsproxyd", IsTimeout: errors.Is(ctx.Err(), context.DeadlineExceeded)}
	}
	if len(r.fallback) == 0 {
		return nil, dnsError(host, "dnsproxyd", netdErr)
	}
	addrs, err := r.lookupFallback(ctx, host)
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) {
			de.Err = "dnsproxyd: " + netdErr.Error() + "; fallback: " + de.Err
			return nil, de
		}
		return nil, dnsError(host, "dnsproxyd", fmt.Errorf("%w; fallback: %w", netdErr, err))
	}
	return addrs, nil
}

func dnsError(host, server string, err error) *net.DNSError {
	de := &net.DNSError{Err: err.Error(), Name: host, Server: server, UnwrapErr: err}
	var pe *dnsproxyd.Error
	if errors.As(err, &pe) {
		de.IsNotFound = pe.NotFound()
		de.IsTemporary = pe.EAI == dnsproxyd.EAIAgain
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		de.IsTimeout = true
	}
	return de
}

// lookupFallback asks the fallback servers with Go's resolver, in order.
func (r *resolver) lookupFallback(ctx context.Context, host string) ([]netip.Addr, error) {
	servers := r.fallback
	var next atomic.Uint32
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		// Go's resolver dials once per server it thinks it has (the
		// defaults, without resolv.conf), A and AAAA at once: each dial
		// takes the next fallback server.
		s := servers[int(next.Add(1)-1)%len(servers)]
		var d net.Dialer
		return d.DialContext(ctx, network, s.String())
	}}
	return res.LookupNetIP(ctx, "ip", host)
}

// lookupHostsFile reads the addresses path gives host (bionic reads
// /system/etc/hosts before it asks netd).
func lookupHostsFile(path, host string) []netip.Addr {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		a, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		for _, name := range fields[1:] {
			if strings.EqualFold(strings.TrimSuffix(name, "."), strings.TrimSuffix(host, ".")) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// DialContext returns d's DialContext (nil d: a zero net.Dialer) that on
// Android resolves host names with LookupNetIP first, then dials the
// addresses in order (each with its share of the time left), so the
// dialer's Control and timeouts apply to every attempt. Off Android it is
// d.DialContext itself.
func (p *Platform) DialContext(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	if p.resolver == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		switch network {
		case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		default:
			return d.DialContext(ctx, network, address)
		}
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return d.DialContext(ctx, network, address)
		}
		if _, err := netip.ParseAddr(host); err == nil || host == "" {
			return d.DialContext(ctx, network, address)
		}
		if d.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d.Timeout)
			defer cancel()
		}
		addrs, err := p.LookupNetIP(ctx, network, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		var errs []error
		for i, a := range addrs {
			actx, cancel := ctx, context.CancelFunc(func() {})
			if dl, ok := ctx.Deadline(); ok && len(addrs)-i > 1 {
				share := time.Until(dl) / time.Duration(len(addrs)-i)
				actx, cancel = context.WithTimeout(ctx, max(share, 2*time.Second))
			}
			c, err := d.DialContext(actx, network, net.JoinHostPort(a.String(), port))
			cancel()
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
}
