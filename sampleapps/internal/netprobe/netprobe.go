// Package netprobe is the test apps' "net" debug command: what the
// app's process may do on the network, as the device decides it. It
// reports the process's supplementary groups (the launcher gives inet,
// 3003, only to apps whose app.json declares "permissions": ["network"]),
// whether it can create an AF_INET socket (a device that enforces
// Android's inet group refuses one without it), and, given a host name,
// what the platform's resolver answers (netd's socket is inet-only too).
package netprobe

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"time"

	"github.com/agentoslab/agentlab/runtime/platform"
)

// Command is the debug command's name.
const Command = "net"

// Result is the command's JSON.
type Result struct {
	UID    int   `json:"uid"`
	Groups []int `json:"groups"`
	// Socket is "ok" when a TCP socket could be created and bound on
	// loopback, else the error ("… permission denied").
	Socket string `json:"socket"`
	// Resolve is set when a host was given.
	Resolve *Lookup `json:"resolve,omitempty"`
}

// Lookup is one resolution through the platform's resolver.
type Lookup struct {
	Host     string   `json:"host"`
	Resolver string   `json:"resolver"`
	Addrs    []string `json:"addrs"`
	Error    string   `json:"error,omitempty"`
}

// Probe runs the probe; host "" skips the lookup.
func Probe(ctx context.Context, host string) Result {
	r := Result{UID: os.Getuid(), Groups: []int{}, Socket: "ok"}
	if gs, err := os.Getgroups(); err == nil {
		r.Groups = append(r.Groups, gs...)
	}
	if ln, err := net.Listen("tcp4", "127.0.0.1:0"); err != nil {
		r.Socket = err.Error()
	} else {
		ln.Close()
	}
	if host != "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p := platform.Current()
		l := &Lookup{Host: host, Resolver: p.Info().Resolver, Addrs: []string{}}
		addrs, err := p.LookupNetIP(ctx, "ip", host)
		for _, a := range addrs {
			l.Addrs = append(l.Addrs, a.String())
		}
		if err != nil {
			l.Error = err.Error()
		}
		r.Resolve = l
	}
	return r
}

// Main runs `net [HOST]`, printing one JSON document; it exits 0 (the
// outcomes are in the document) or 2 on a usage error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		io.WriteString(stderr, "usage: net [HOST]\n")
		return 2
	}
	host := ""
	if len(args) == 1 {
		host = args[0]
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.Encode(Probe(ctx, host))
	return 0
}
