// Package callertest fakes the one part of the runtime's caller socket
// that the caller apps' binary tests need without a runtime: a listener
// that answers every channel open with authorization_pending, so a round
// stays in "waiting for the owner" until it is stopped. Rounds against
// the real runtime are tested end to end in sampleapps/e2e.
package callertest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// pendingLine is the runtime's refusal while the owner has not answered
// (runtime/callerchan; parsed by acpclient.ParseOpenLine).
const pendingLine = `{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"agentos.acp.authorization_pending: waiting for the user","data":{"agentosCode":"not_open","reason":"authorization_pending","requestId":"req_callertest"}}}` + "\n"

// Pending is a caller socket whose owner never answers.
type Pending struct {
	// Name is the socket's name, for $AGENTOS_CALLER_SOCKET.
	Name  string
	opens atomic.Int64
}

// Opens counts the channel opens answered so far.
func (p *Pending) Opens() int { return int(p.opens.Load()) }

// NewPending listens on a fresh abstract socket until the test ends.
func NewPending(t testing.TB) *Pending {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	p := &Pending{Name: "@callertest-" + hex.EncodeToString(b[:])}
	ln, err := transport.Listen(p.Name)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.opens.Add(1)
			answer(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return p
}

func answer(c net.Conn) {
	defer c.Close()
	c.Write([]byte(pendingLine))
}
