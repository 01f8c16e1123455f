package platform

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Probe is what `agentosd platform` reports: the platform as this
// process found it, who the process is, and, when asked, a lookup and an
// HTTPS request made the way the runtime makes them.
type Probe struct {
	Platform Info         `json:"platform"`
	UID      int          `json:"uid"`
	Groups   []int        `json:"groups"`
	Lookup   *ProbeLookup `json:"lookup,omitempty"`
	Fetch    *ProbeFetch  `json:"fetch,omitempty"`
}

// ProbeLookup is one name resolved with LookupNetIP.
type ProbeLookup struct {
	Host  string   `json:"host"`
	Addrs []string `json:"addrs"`
	Error string   `json:"error,omitempty"`
}

// ProbeFetch is one GET through DialContext (the system's CA roots).
type ProbeFetch struct {
	URL    string `json:"url"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Probe runs the probe; an empty host or url skips that part.
func (p *Platform) Probe(ctx context.Context, host, url string) Probe {
	out := Probe{Platform: p.Info(), UID: os.Getuid(), Groups: []int{}}
	if gs, err := os.Getgroups(); err == nil {
		out.Groups = append(out.Groups, gs...)
	}
	if host != "" {
		lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		l := &ProbeLookup{Host: host, Addrs: []string{}}
		addrs, err := p.LookupNetIP(lctx, "ip", host)
		cancel()
		for _, a := range addrs {
			l.Addrs = append(l.Addrs, a.String())
		}
		if err != nil {
			l.Error = err.Error()
		}
		out.Lookup = l
	}
	if url != "" {
		f := &ProbeFetch{URL: url}
		tr := &http.Transport{DialContext: p.DialContext(&net.Dialer{Timeout: 15 * time.Second}), TLSHandshakeTimeout: 15 * time.Second}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = c.Do(req); err == nil {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				f.Status = resp.StatusCode
			}
		}
		if err != nil {
			f.Error = err.Error()
		}
		out.Fetch = f
	}
	return out
}
