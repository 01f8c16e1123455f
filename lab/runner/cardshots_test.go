package runner_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/lab/steps"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/console"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// cardPhone is a device whose runtime has one pending consent card and a
// real owner console: its ctl and the console read the same cards, and
// its adb forward relays to the console's socket.
type cardPhone struct {
	devices.Device
	srv *console.Server

	mu       sync.Mutex
	cards    []consent.View
	answered map[string]string
	lns      []net.Listener
}

func newCardPhone(t *testing.T) *cardPhone {
	t.Helper()
	p := &cardPhone{answered: map[string]string{}}
	p.cards = []consent.View{{RequestID: "req-1", Risk: catalog.RiskWrite, RemainingMs: 60000, Card: consent.Card{RequestID: "req-1",
		Title: "Allow «Create a note»?", InitiatorLine: "Requested by Notes (org.agentos.sample.notes)", ToolName: "mcp__notes__notes__note_create",
		ToolDisplayName: "Create a note", ArgumentsPreview: `{"title":"x"}`, Risk: catalog.RiskWrite, Severity: consent.SeverityElevated,
		Options:        []consent.CardOption{{Choice: consent.AllowOnce, Label: "Allow once"}, {Choice: consent.Deny, Label: "Deny"}},
		DeadlineMillis: time.Now().Add(time.Minute).UnixMilli()}}}
	var b [4]byte
	rand.Read(b[:])
	srv, err := console.New(&console.Options{Name: transport.Names{Prefix: "r" + hex.EncodeToString(b[:]) + "-"}.Console(),
		Admin: console.AdminFunc(p.invoke)})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(srv.Close)
	p.srv = srv
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, ln := range p.lns {
			ln.Close()
		}
	})
	return p
}

// invoke is the runtime's admin API as the console calls it.
func (p *cardPhone) invoke(_ context.Context, _ transport.Cred, method string, params any) (json.RawMessage, error) {
	var res any
	switch method {
	case "consent.pending":
		res = p.pending()
	case "consent.respond":
		f := params.(map[string]string)
		res = map[string]bool{"accepted": p.respond(f["id"], f["choice"])}
	case "callers.list":
		res = map[string]any{"callers": []any{}, "cards": []any{}, "health": "ok"}
	default:
		return nil, errcode.Newf(errcode.Unsupported, "unknown admin method %q", method)
	}
	return json.Marshal(res)
}

func (p *cardPhone) pending() []consent.View {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]consent.View{}, p.cards...)
}

func (p *cardPhone) respond(id, choice string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.cards {
		if c.RequestID == id {
			p.cards = append(p.cards[:i], p.cards[i+1:]...)
			p.answered[id] = choice
			return true
		}
	}
	return false
}

// Call is the runtime's ctl as the lab's steps use it.
func (p *cardPhone) Call(_ context.Context, out any, args ...string) error {
	var res any = map[string]any{}
	switch strings.Join(args[:min(2, len(args))], " ") {
	case "console url":
		res = console.URLInfo{Socket: p.srv.Name(), Path: p.srv.Path()}
	case "consent pending":
		res = p.pending()
	case "consent recent":
		res = []any{}
	case "consent mode":
		res = map[string]any{"mode": args[2]}
	case "callers list":
		res = map[string]any{"callers": []any{}, "cards": []any{}}
	}
	if out == nil {
		return nil
	}
	b, _ := json.Marshal(res)
	return json.Unmarshal(b, out)
}

func (p *cardPhone) Serial() string { return "cardphone" }

func (p *cardPhone) Shell(context.Context, string) (devices.Result, error) {
	return devices.Result{}, nil
}
func (p *cardPhone) Su(context.Context, string) (devices.Result, error) { return devices.Result{}, nil }
func (p *cardPhone) Logs(context.Context, time.Time) ([]byte, error) {
	return nil, devices.ErrUnsupported
}
func (p *cardPhone) Screenshot(context.Context) ([]byte, error) { return nil, devices.ErrUnsupported }

// Forward relays a loopback port to the console's socket, as adb
// forward tcp:0 localabstract:NAME does.
func (p *cardPhone) Forward(_ context.Context, _, remote string) (int, error) {
	name, ok := strings.CutPrefix(remote, "localabstract:")
	if !ok || "@"+name != p.srv.Name() {
		return 0, fmt.Errorf("forward to %s: no such socket", remote)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.lns = append(p.lns, ln)
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := transport.Dial(context.Background(), p.srv.Name())
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (p *cardPhone) RemoveForward(context.Context, string) error { return nil }

type cardLease struct{ dev devices.Device }

func (l cardLease) Device() devices.Device     { return l.dev }
func (l cardLease) Serial() string             { return l.dev.Serial() }
func (l cardLease) Lost() <-chan struct{}      { return nil }
func (l cardLease) Release(pool.Outcome) error { return nil }

// TestCardScreenshotsFollowTheArtifactsPolicy: the ui driver's
// screenshot of every card it answered is an artifact like the others —
// kept when the artifacts policy keeps the attempt (always; on-failure
// when it failed), left out when it does not or when lab.yaml says
// screenshot: false — and report.html links it.
func TestCardScreenshotsFollowTheArtifactsPolicy(t *testing.T) {
	chromium := testenv.NeedChromium(t)
	const doc = `name: shots
consent_driver: ui
setup:
  - consent: {default: ALLOW_ONCE, interval: 100ms}
steps:
  - wait:
      until: {of: cards, path: '[0].accepted', eq: true}
      timeout: 60s
checks:
  - {name: tapped, of: cards, path: '[0].via', eq: ui}
  - {name: answered, of: cards, path: '[0].answeredWith', eq: %s}
`
	for _, tc := range []struct {
		name     string
		policy   string
		fail     bool
		noShots  bool
		wantShot bool
	}{
		{"always keeps a pass's", config.ArtifactsAlways, false, false, true},
		{"on-failure drops a pass's", config.ArtifactsOnFailure, false, false, false},
		{"on-failure keeps a failure's", config.ArtifactsOnFailure, true, false, true},
		{"never drops a failure's", config.ArtifactsNever, true, false, false},
		{"screenshot false drops them", config.ArtifactsAlways, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := "ALLOW_ONCE"
			if tc.fail {
				want = "DENY"
			}
			sc, err := scenario.Parse(fmt.Appendf(nil, doc, want), "shots.yaml", nil)
			require.NoError(t, err)
			phone := newCardPhone(t)
			exec := &runner.DeviceExecutor{Ctl: func(devices.Device) steps.Ctl { return phone }, Chromium: chromium,
				Kinds: map[string]reports.DeviceKind{phone.Serial(): reports.DeviceVirtual}, NoScreenshots: tc.noShots}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			out := exec.Run(ctx, &runner.Attempt{Scenario: sc, Number: 1, Leases: []runner.Lease{cardLease{phone}}, RunDir: dir,
				RelDir: "artifacts/shots/attempt-1", Keep: config.Artifacts{Policy: tc.policy}.Keep})
			require.NoError(t, out.LabFault)
			require.NoError(t, out.Err)
			require.Len(t, out.Checks, 2)
			assert.True(t, out.Checks[0].OK, "answered through the console")
			assert.Equal(t, !tc.fail, out.Checks[1].OK)
			phone.mu.Lock()
			assert.Equal(t, map[string]string{"req-1": "ALLOW_ONCE"}, phone.answered, "the browser tapped the card")
			phone.mu.Unlock()
			var shot *reports.Artifact
			for i, a := range out.Artifacts {
				if strings.Contains(a.Path, "/card-") {
					shot = &out.Artifacts[i]
				}
			}
			pngs, _ := filepath.Glob(filepath.Join(dir, "artifacts/shots/attempt-1/*card-*.png"))
			if !tc.wantShot {
				assert.Nil(t, shot, "a card screenshot was kept")
				assert.Empty(t, pngs, "a card screenshot was written")
				return
			}
			require.NotNil(t, shot, "no card screenshot among %v", out.Artifacts)
			assert.Equal(t, reports.ArtifactScreenshot, shot.Kind)
			assert.Equal(t, "artifacts/shots/attempt-1/card-01-consent-ALLOW_ONCE.png", shot.Path)
			b, err := os.ReadFile(filepath.Join(dir, shot.Path))
			require.NoError(t, err)
			assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), "a PNG")

			run := &reports.Run{SchemaVersion: reports.SchemaVersion, RunID: "r", Scenarios: []reports.Scenario{{Name: sc.Name, File: "shots.yaml",
				Verdict: reports.VerdictPass, Attempts: []reports.Attempt{{Number: 1, Device: phone.Serial(), Verdict: reports.VerdictPass, Artifacts: out.Artifacts}},
				Artifacts: out.Artifacts}}}
			var html bytes.Buffer
			require.NoError(t, reports.Render(&html, run, reports.FormatHTML))
			assert.Contains(t, html.String(), `<a href="artifacts/shots/attempt-1/card-01-consent-ALLOW_ONCE.png">`)
		})
	}
}
