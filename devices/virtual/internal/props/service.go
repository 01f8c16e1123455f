//go:build linux

package props

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/internal/peercred"
)

// SocketName is the abstract socket of the property service inside a
// device.
const SocketName = "@vdevice.property_service"

const (
	maxRequest  = 8 << 10
	ioTimeout   = 10 * time.Second
	maxWaitTime = 24 * time.Hour
)

// Request is one call to the service.
type Request struct {
	Op    string  `json:"op"` // get | list | set | reset | delete | wait
	Name  string  `json:"name,omitempty"`
	Value string  `json:"value,omitempty"`
	Old   *string `json:"old,omitempty"` // wait: until the value differs from Old (nil: until it exists)
}

// Response is the service's answer.
type Response struct {
	Value string      `json:"value,omitempty"`
	Found bool        `json:"found,omitempty"`
	Props [][2]string `json:"props,omitempty"`
	Err   string      `json:"err,omitempty"`
}

// mayWrite says whether uid may set name with setprop: root may set
// anything, the shell user the prefixes Android's shell domain may set
// (and sys.powerctl, so that "adb shell reboot" works, and
// sys.vdevice.remove_modules, Magisk's bootloop escape), apps nothing but
// debug.* properties.
func mayWrite(uid int, name string) bool {
	switch uid {
	case 0:
		return true
	case 2000:
		for _, p := range []string{"debug.", "log.", "persist.", "service.adb.", "sys.powerctl", "sys.vdevice.remove_modules"} {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	return strings.HasPrefix(name, "debug.")
}

// Server serves a Store.
type Server struct {
	store *Store
	log   *slog.Logger
	ln    net.Listener
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// Serve starts serving store on the abstract socket; Close stops it.
func Serve(store *Store, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("unix", SocketName)
	if err != nil {
		return nil, fmt.Errorf("property service: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{store: store, log: log, ln: ln, ctx: ctx, stop: cancel}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				s.handle(c)
			}()
		}
	}()
	return s, nil
}

// Close stops the service and waits for its connections.
func (s *Server) Close() {
	s.stop()
	s.ln.Close()
	s.wg.Wait()
}

func (s *Server) handle(c net.Conn) {
	cred, err := peercred.Of(c)
	if err != nil {
		return
	}
	uid := cred.UID
	c.SetDeadline(time.Now().Add(ioTimeout))
	var req Request
	if err := json.NewDecoder(io.LimitReader(c, maxRequest)).Decode(&req); err != nil {
		return
	}
	resp := s.do(uid, &req, c)
	c.SetWriteDeadline(time.Now().Add(ioTimeout))
	json.NewEncoder(c).Encode(resp)
}

func (s *Server) do(uid int, req *Request, c net.Conn) *Response {
	switch req.Op {
	case "get":
		v, ok := s.store.Get(req.Name)
		return &Response{Value: v, Found: ok}
	case "list":
		return &Response{Props: s.store.All()}
	case "set":
		if !mayWrite(uid, req.Name) {
			return &Response{Err: ErrDenied.Error()}
		}
		if err := s.store.Set(req.Name, req.Value); err != nil {
			return &Response{Err: errors.Unwrap(err).Error()}
		}
		return &Response{}
	case "reset", "delete":
		if uid != 0 {
			return &Response{Err: ErrDenied.Error()}
		}
		if req.Op == "delete" {
			s.store.Delete(req.Name)
			return &Response{}
		}
		if err := s.store.Reset(req.Name, req.Value); err != nil {
			return &Response{Err: errors.Unwrap(err).Error()}
		}
		return &Response{}
	case "wait":
		// The waiter may wait long; the deadline moves with it, and the
		// wait ends if the client goes away or the service stops.
		c.SetDeadline(time.Time{})
		ctx, cancel := context.WithTimeout(s.ctx, maxWaitTime)
		defer cancel()
		go func() {
			var b [1]byte
			c.Read(b[:])
			cancel()
		}()
		v, err := s.store.Wait(ctx, req.Name, req.Old)
		if err != nil {
			return &Response{Err: err.Error()}
		}
		return &Response{Value: v, Found: true}
	}
	return &Response{Err: "unknown op"}
}

// Call sends one request to the service of the device the caller runs in.
// A wait request has no deadline beyond ctx.
func Call(ctx context.Context, req *Request) (*Response, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", SocketName)
	if err != nil {
		return nil, fmt.Errorf("property service: %w", err)
	}
	defer c.Close()
	if req.Op != "wait" {
		c.SetDeadline(time.Now().Add(ioTimeout))
	} else if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, fmt.Errorf("property service: %w", err)
	}
	var resp Response
	if err := json.NewDecoder(io.LimitReader(c, 4<<20)).Decode(&resp); err != nil {
		return nil, fmt.Errorf("property service: %w", err)
	}
	return &resp, nil
}
