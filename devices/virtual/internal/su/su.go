//go:build linux

package su

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
	"github.com/agentoslab/agentlab/internal/peercred"
	"golang.org/x/sys/unix"
)

// SocketName is the daemon's abstract socket inside a device.
const SocketName = "@vdevice.su"

// PolicyFile lists extra grants and denials, one "UID allow|deny" a line;
// uid 0 and 2000 are allowed unless denied there.
const PolicyFile = "/data/adb/su_policy"

const maxRequest = 64 << 10

// Request is what the client asks for.
type Request struct {
	UID int `json:"uid"`
	// Command runs as "sh -c Command" when set; Argv runs directly when
	// set; neither means an interactive shell.
	Command *string  `json:"command,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Shell   string   `json:"shell,omitempty"`
	Env     []string `json:"env,omitempty"`
	Dir     string   `json:"dir,omitempty"`
}

// Response ends a request: the exit code, or why nothing ran.
type Response struct {
	Code int    `json:"code"`
	Err  string `json:"err,omitempty"`
}

// Daemon serves su requests.
type Daemon struct {
	reaper *proc.Reaper
	shell  string
	log    *slog.Logger
	ln     *net.UnixListener
	wg     sync.WaitGroup
}

// Serve starts the daemon; processes are started through reaper; shell is
// the default shell's path.
func Serve(reaper *proc.Reaper, shell string, log *slog.Logger) (*Daemon, error) {
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: SocketName, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("su daemon: %w", err)
	}
	d := &Daemon{reaper: reaper, shell: shell, log: log, ln: ln}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				defer c.Close()
				d.handle(c)
			}()
		}
	}()
	return d, nil
}

// Close stops accepting and waits for running requests; their commands
// are hung up on when their clients go away (in a device, init's exit
// kills them all).
func (d *Daemon) Close() {
	d.ln.Close()
	d.wg.Wait()
}

// allowed applies the policy to a caller uid.
func allowed(uid int) bool {
	allow := uid == 0 || uid == 2000
	if b, err := os.ReadFile(PolicyFile); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == strconv.Itoa(uid) {
				allow = f[1] == "allow"
			}
		}
	}
	return allow
}

func (d *Daemon) handle(c *net.UnixConn) {
	reply := func(r Response) {
		b, _ := json.Marshal(r)
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		c.Write(b)
	}
	cred, err := peercred.Of(c)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, maxRequest)
	oob := make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return
	}
	files := receivedFiles(oob[:oobn])
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if !allowed(cred.UID) {
		d.log.Info("su denied", "uid", cred.UID)
		reply(Response{Code: 1, Err: "Permission denied"})
		return
	}
	var req Request
	if err := json.Unmarshal(buf[:n], &req); err != nil || len(files) != 3 || req.UID < 0 {
		reply(Response{Code: 1, Err: "bad request"})
		return
	}
	shell := req.Shell
	if shell == "" {
		shell = d.shell
	}
	var path string
	var argv []string
	switch {
	case req.Command != nil:
		path, argv = shell, []string{"sh", "-c", *req.Command}
	case len(req.Argv) > 0:
		path, argv = req.Argv[0], req.Argv
		if !strings.Contains(path, "/") {
			path = lookPath(path, req.Env)
		}
	default:
		path, argv = shell, []string{"sh"}
	}
	var pcred *syscall.Credential
	if req.UID != 0 {
		pcred = &syscall.Credential{Uid: uint32(req.UID), Gid: uint32(req.UID), Groups: proc.Groups(req.UID)}
	}
	dir := req.Dir
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = "/"
	}
	d.log.Info("su", "from", cred.UID, "to", req.UID)
	p, err := d.reaper.Start(&proc.Cmd{Path: path, Args: argv, Env: req.Env, Dir: dir, Cred: pcred, Files: files, Setsid: true})
	for _, f := range files {
		f.Close()
	}
	files = nil
	if err != nil {
		reply(Response{Code: 127, Err: fmt.Sprintf("%s: %v", argv[0], errors.Unwrap(err))})
		return
	}
	// The client waits for the reply; if it goes away first, the command
	// is hung up on.
	c.SetReadDeadline(time.Time{})
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		var b [1]byte
		c.Read(b[:])
	}()
	select {
	case <-p.Done():
	case <-gone:
		p.KillGroup(syscall.SIGHUP)
		t := time.NewTimer(2 * time.Second)
		select {
		case <-p.Done():
		case <-t.C:
			p.KillGroup(syscall.SIGKILL)
		}
		t.Stop()
	}
	code, _ := p.Wait(context.Background())
	reply(Response{Code: code})
	c.CloseRead()
	c.Close()
	<-gone
}

func receivedFiles(oob []byte) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "su-fd"))
		}
	}
	return files
}

func lookPath(name string, env []string) string {
	pathEnv := "/system/bin:/usr/bin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

// Call sends req with stdio (stdin, stdout, stderr: the client's own, for
// the su tool) and waits for the command to end. It returns the exit code
// to exit with.
func Call(ctx context.Context, req *Request, stdio [3]*os.File) (int, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unixpacket", SocketName)
	if err != nil {
		return 1, fmt.Errorf("su: no root daemon: %w", err)
	}
	c := nc.(*net.UnixConn)
	defer c.Close()
	b, err := json.Marshal(req)
	if err != nil || len(b) > maxRequest {
		return 1, errors.New("su: request too large")
	}
	rights := unix.UnixRights(int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd()))
	_, _, err = c.WriteMsgUnix(b, rights, nil)
	runtime.KeepAlive(stdio)
	if err != nil {
		return 1, fmt.Errorf("su: %w", err)
	}
	go func() {
		<-ctx.Done()
		c.Close()
	}()
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return 1, fmt.Errorf("su: root daemon went away: %w", err)
	}
	var resp Response
	if err := json.Unmarshal(buf[:n], &resp); err != nil {
		return 1, fmt.Errorf("su: bad reply: %w", err)
	}
	if resp.Err != "" {
		return resp.Code, errors.New(resp.Err)
	}
	return resp.Code, nil
}
