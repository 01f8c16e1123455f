// Package consoleui is the lab's hand on the owner's web console
// (runtime/console): it opens the console of a device through adb
// forward, and drives it in headless Chromium (chromedp) the way a
// person does — waiting out the tap delay, tapping the button, keeping a
// screenshot of every card it answered.
package consoleui

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/runtime/console"
)

// DefaultChromium is Debian's chromium package.
const DefaultChromium = "/usr/bin/chromium"

// ErrNoChromium means no Chromium binary was found.
var ErrNoChromium = errors.New("consoleui: chromium not found (Debian/Ubuntu: apt-get install chromium)")

// FindChromium returns path when set, else DefaultChromium or the first
// chromium or chromium-browser on PATH.
func FindChromium(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	for _, p := range []string{DefaultChromium, "chromium", "chromium-browser", "google-chrome"} {
		if found, err := exec.LookPath(p); err == nil {
			return found, nil
		}
	}
	return "", ErrNoChromium
}

// Caller calls an `agentosd ctl` verb and decodes its JSON result
// (runtimectl.Client.Call).
type Caller interface {
	Call(ctx context.Context, out any, args ...string) error
}

// Link is a device's console reached from this host.
type Link struct {
	// URL opens the console (it carries this start's token once).
	URL string
	// Base is the console's origin, http://127.0.0.1:PORT.
	Base  string
	Port  int
	dev   devices.Device
	local string
}

// Open asks the runtime for the console's socket and path (ctl console
// url) and forwards a local TCP port to it.
func Open(ctx context.Context, dev devices.Device, ctl Caller) (*Link, error) {
	var u console.URLInfo
	if err := ctl.Call(ctx, &u, "console", "url"); err != nil {
		return nil, fmt.Errorf("console url: %w", err)
	}
	name, ok := strings.CutPrefix(u.Socket, "@")
	if !ok {
		return nil, fmt.Errorf("console: socket %q is not an abstract name", u.Socket)
	}
	port, err := dev.Forward(ctx, "tcp:0", "localabstract:"+name)
	if err != nil {
		return nil, fmt.Errorf("console: adb forward: %w", err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	return &Link{URL: base + u.Path, Base: base, Port: port, dev: dev, local: "tcp:" + strconv.Itoa(port)}, nil
}

// Close removes the forward.
func (l *Link) Close(ctx context.Context) error {
	if l == nil || l.dev == nil {
		return nil
	}
	return l.dev.RemoveForward(ctx, l.local)
}
