package steps

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// The official ACP TypeScript client (spec §10.9): client.mjs and the
// pinned @agentclientprotocol/sdk it imports. node_modules is installed
// with `npm ci` into a cache folder named by the files' digest, once.
//
//go:embed acpclient/client.mjs acpclient/package.json acpclient/package-lock.json
var acpClientFiles embed.FS

// acpClientInstall serialises npm ci between the attempts of one run.
var acpClientInstall sync.Mutex

// acpClientDir returns a folder holding the client and its node_modules.
func acpClientDir(ctx context.Context) (string, error) {
	h := sha256.New()
	names := []string{"client.mjs", "package.json", "package-lock.json"}
	for _, n := range names {
		b, err := acpClientFiles.ReadFile("acpclient/" + n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "agentlab", "acpclient-"+hex.EncodeToString(h.Sum(nil))[:16])
	acpClientInstall.Lock()
	defer acpClientInstall.Unlock()
	installed := func() bool {
		_, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json"))
		return err == nil
	}
	if installed() {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("the ACP client needs node and npm on the lab's host (Debian: apt-get install nodejs npm)")
	}
	// Installed beside and renamed into place: two lab processes (the
	// suite and the kill matrix run side by side) never see half a folder.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".part-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, n := range names {
		b, _ := fs.ReadFile(acpClientFiles, "acpclient/"+n)
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci for the ACP client: %w\n%s", err, tail(out, 2000))
	}
	if err := os.Rename(tmp, dir); err != nil && !installed() {
		return "", err
	}
	return dir, nil
}

// acpClient runs the client's suite against t through agentlab bridge:
// the bridge is the lab's own binary (`agentlab bridge --connect
// unix:SOCK`), and every connection to SOCK is one dial of the device's
// desktop socket, so the client can start as many bridges as its suite
// needs. The client gets a fresh pairing code; the output is its result.
func (a *attempt) acpClient(ctx context.Context, t *Target, in *scenario.ACPClientStep) (any, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("the ACP client needs node on the lab's host (Debian: apt-get install nodejs npm)")
	}
	dir, err := acpClientDir(ctx)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the bridge is this binary: %w", err)
	}
	if err := enableDesktop(ctx, t); err != nil {
		return nil, fmt.Errorf("desktop access: %w", err)
	}
	var code struct {
		Code string `json:"code"`
	}
	if err := t.Ctl.Call(ctx, &code, "desktop", "code"); err != nil {
		return nil, fmt.Errorf("desktop code: %w", err)
	}
	if a.env.Secret != nil && code.Code != "" {
		a.env.Secret(reports.Secret{Name: "pairing code", Value: []byte(code.Code)})
	}

	work, err := os.MkdirTemp("", "agentlab-acpclient-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	sock := filepath.Join(work, "acp.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	relayCtx, stopRelay := context.WithCancel(ctx)
	var relays sync.WaitGroup
	defer func() {
		stopRelay()
		ln.Close()
		relays.Wait()
	}()
	relays.Add(1)
	go func() {
		defer relays.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			relays.Add(1)
			go func() {
				defer relays.Done()
				relayToDevice(relayCtx, t, c)
			}()
		}
	}()

	cfg, _ := json.Marshal(map[string]any{
		"suite":  in.Suite,
		"bridge": []string{self, "bridge", "--connect", "unix:" + sock, "--quiet"},
		"code":   code.Code,
		"work":   work,
	})
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTLAB_ACP_CLIENT="+string(cfg))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ACP client: %w\n%s", err, tail(stderr.Bytes(), 4000))
	}
	// The result is the client's last line.
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), maxOutput)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			last = append(last[:0], l...)
		}
	}
	var res any
	if err := json.Unmarshal(last, &res); err != nil {
		return nil, fmt.Errorf("ACP client printed no result: %w\n%s", err, tail(stderr.Bytes(), 4000))
	}
	return res, nil
}

// relayToDevice copies c to and from a new dial of the device's desktop
// socket until either side ends.
func relayToDevice(ctx context.Context, t *Target, c net.Conn) {
	defer c.Close()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	d, err := t.Device.Dial(dctx, acpSocket)
	cancel()
	if err != nil {
		return
	}
	defer d.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); d.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	go func() { io.Copy(d, c); done <- struct{}{} }()
	go func() { io.Copy(c, d); done <- struct{}{} }()
	<-done
}

// tail is the end of b, at most n bytes.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
