package callers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = time.UnixMilli(1_800_000_000_000)

func digest(b byte) string { return strings.Repeat(fmt.Sprintf("%02x", b), 32) }

var (
	notes = callers.App{UID: 10100, Package: "org.agentos.sample.notes", Label: "Notes", SigningDigest: digest(0xab)}
	sms   = callers.App{UID: 10101, Package: "org.agentos.sample.sms", Label: "SMS\u202e", SigningDigest: digest(0xcd)}
)

// fakeCanceller records CancelOwner calls and returns one task id per owner.
type fakeCanceller struct {
	mu     sync.Mutex
	owners []string
}

func (f *fakeCanceller) CancelOwner(_ context.Context, owner, by string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if by != "revoked" {
		return nil, fmt.Errorf("by = %q", by)
	}
	f.owners = append(f.owners, owner)
	return []string{"tsk_" + owner}, nil
}

type env struct {
	t     *testing.T
	dir   string
	clock *clocktest.Clock
	canc  *fakeCanceller
	r     *callers.Registry
}

func newEnv(t *testing.T, cfg callers.Config) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: clocktest.New(t0), canc: &fakeCanceller{}}
	e.reopen(cfg)
	return e
}

func (e *env) reopen(cfg callers.Config) {
	e.t.Helper()
	if e.r != nil {
		e.r.Close()
	}
	r, err := callers.Open(&callers.Options{Dir: e.dir, Config: cfg, Clock: e.clock, Canceller: e.canc,
		Usage: func(owner string) (int64, int, int) { return 3, 2, 1 }})
	if err != nil {
		e.t.Fatal(err)
	}
	e.r = r
	e.t.Cleanup(func() { r.Close() })
}

// open opens as app and returns the refusal (nil when allowed).
func (e *env) open(app callers.App) (*callers.Channel, *callers.Refusal) {
	e.t.Helper()
	ch, err := e.r.OpenChannel(app, func() {})
	if err == nil {
		return ch, nil
	}
	var ref *callers.Refusal
	if !errors.As(err, &ref) {
		e.t.Fatalf("Open: %v", err)
	}
	return nil, ref
}

func (e *env) item(pkg string) (callers.Item, bool) {
	for _, it := range e.r.List().Callers {
		if it.PackageName == pkg {
			return it, true
		}
	}
	return callers.Item{}, false
}

func TestFirstOpenIsPendingAndNeverBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{})
	_, ref := e.open(notes)
	if ref == nil || ref.Reason != callers.ReasonPending || ref.RequestID == "" {
		t.Fatalf("first open = %+v", ref)
	}
	if !strings.HasPrefix(ref.Error(), "agentos.acp.authorization_pending: ") {
		t.Fatalf("message = %q", ref.Error())
	}
	e.clock.Advance(time.Second)
	_, again := e.open(notes)
	if again == nil || again.RequestID != ref.RequestID {
		t.Fatalf("retry = %+v, want same request id %s", again, ref.RequestID)
	}
	it, ok := e.item(notes.Package)
	if !ok || it.State != callers.StatePending || it.RequestID != ref.RequestID || it.RequestedAt != t0.UnixMilli() ||
		it.DecidedAt != 0 || it.DeniedUntil != nil || it.Label != "Notes" || it.SigningDigest != notes.SigningDigest {
		t.Fatalf("item = %+v", it)
	}
	cards := e.r.List().Cards
	if len(cards) != 1 || cards[0].DigestPrefix != notes.SigningDigest[:12] || cards[0].PackageName != notes.Package ||
		cards[0].Label != "Notes" || cards[0].RequestID != ref.RequestID {
		t.Fatalf("cards = %+v", cards)
	}
	// PENDING lives in memory only.
	if _, err := os.Stat(filepath.Join(e.dir, callers.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("registry file written for a pending entry: %v", err)
	}
}

func TestAnswerAndSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{})
	_, ref := e.open(notes)
	ok, err := e.r.Answer(ref.RequestID, true)
	if !ok || err != nil {
		t.Fatalf("answer = %v %v", ok, err)
	}
	if ok, _ := e.r.Answer(ref.RequestID, false); ok {
		t.Fatal("second answer taken")
	}
	ch, ref2 := e.open(notes)
	if ref2 != nil {
		t.Fatalf("open after allow: %v", ref2)
	}
	it, _ := e.item(notes.Package)
	if it.State != callers.StateAllowed || it.RequestID != "" || it.RequestedAt != 0 || it.DecidedAt == 0 || it.Usage.ActiveChannels != 1 {
		t.Fatalf("allowed item = %+v", it)
	}
	ch.Detach()
	ch.Detach()
	if it, _ := e.item(notes.Package); it.Usage.ActiveChannels != 0 {
		t.Fatalf("channels after detach = %d", it.Usage.ActiveChannels)
	}

	// deny → cooldown; allow clears it; remove forgets; unknown → not found.
	if err := e.r.Set(context.Background(), notes.Package, callers.StateDenied); err != nil {
		t.Fatal(err)
	}
	if _, ref := e.open(notes); ref == nil || ref.Reason != callers.ReasonDenied {
		t.Fatalf("open in cooldown = %+v", ref)
	}
	if err := e.r.Set(context.Background(), notes.Package, callers.StateAllowed); err != nil {
		t.Fatal(err)
	}
	if _, ref := e.open(notes); ref != nil {
		t.Fatalf("open after allow = %+v", ref)
	}
	if err := e.r.Set(context.Background(), notes.Package, callers.StateRemoved); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.item(notes.Package); ok {
		t.Fatal("removed package still listed")
	}
	if err := e.r.Set(context.Background(), "org.example.none", callers.StateAllowed); !errors.Is(err, callers.ErrNotFound) {
		t.Fatalf("unknown package: %v", err)
	}
	if err := e.r.Set(context.Background(), notes.Package, "bogus"); !errors.Is(err, callers.ErrNotFound) {
		t.Fatalf("removed package: %v", err)
	}
}

func TestDenyCooldownThenAskedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{DenyCooldown: 8 * time.Second})
	_, ref := e.open(notes)
	if ok, _ := e.r.Answer(ref.RequestID, false); !ok {
		t.Fatal("deny not taken")
	}
	it, _ := e.item(notes.Package)
	if it.State != callers.StateDenied || it.DeniedUntil == nil || *it.DeniedUntil != t0.Add(8*time.Second).UnixMilli() {
		t.Fatalf("denied item = %+v", it)
	}
	e.clock.Advance(7 * time.Second)
	if _, ref := e.open(notes); ref == nil || ref.Reason != callers.ReasonDenied {
		t.Fatalf("in cooldown: %+v", ref)
	}
	if n := len(e.r.List().Cards); n != 0 {
		t.Fatalf("%d cards during cooldown", n)
	}
	e.clock.Advance(time.Second)
	_, again := e.open(notes)
	if again == nil || again.Reason != callers.ReasonPending || again.RequestID == ref.RequestID {
		t.Fatalf("after cooldown = %+v", again)
	}
}

func TestPendingTTLCountsAsDenial(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{PendingTTL: 8 * time.Second, DenyCooldown: time.Minute})
	e.open(notes)
	// The app retries every second; nobody answers.
	for i := 0; i < 7; i++ {
		e.clock.Advance(time.Second)
		if _, ref := e.open(notes); ref.Reason != callers.ReasonPending {
			t.Fatalf("try %d: %v", i, ref)
		}
	}
	e.clock.Advance(time.Second)
	// Polled: the fake clock runs due timers in goroutines.
	require.Eventually(t, func() bool {
		it, _ := e.item(notes.Package)
		return it.State == callers.StateDenied
	}, 5*time.Second, time.Millisecond, "waiting for denial")
	if _, ref := e.open(notes); ref.Reason != callers.ReasonDenied {
		t.Fatalf("after ttl: %v", ref)
	}
	if n := len(e.r.List().Cards); n != 0 {
		t.Fatal("card not withdrawn")
	}
}

func TestAbandon(t *testing.T) {
	t.Parallel()
	t.Run("early: withdrawn without denial", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, callers.Config{})
		_, first := e.open(notes)
		e.clock.Advance(4 * time.Second)
		e.open(notes) // a retry re-arms the abandon timer
		e.clock.Advance(4 * time.Second)
		if _, ok := e.item(notes.Package); !ok {
			t.Fatal("withdrawn while the app still retried")
		}
		e.clock.Advance(time.Second)
		require.Eventually(t, func() bool {
			_, ok := e.item(notes.Package)
			return !ok
		}, 5*time.Second, time.Millisecond, "waiting for withdrawal")
		_, next := e.open(notes)
		if next.Reason != callers.ReasonPending || next.RequestID == first.RequestID {
			t.Fatalf("after withdrawal: %+v", next)
		}
	})
	t.Run("late: counts as denial", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, callers.Config{})
		e.open(notes)
		for i := 0; i < 86; i++ {
			e.clock.Advance(time.Second)
			e.open(notes)
		}
		e.clock.Advance(5 * time.Second)
		require.Eventually(t, func() bool {
			it, _ := e.item(notes.Package)
			return it.State == callers.StateDenied
		}, 5*time.Second, time.Millisecond, "waiting for denial")
	})
}

func TestLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{MaxPending: 2, MaxEntries: 3})
	app := func(i int) callers.App {
		return callers.App{UID: 10200 + i, Package: fmt.Sprintf("org.example.app%d", i), SigningDigest: digest(byte(i))}
	}
	e.open(app(1))
	e.open(app(2))
	if _, ref := e.open(app(3)); ref.Reason != callers.ReasonNotOpen {
		t.Fatalf("third pending: %+v", ref)
	}
	if _, ok := e.item(app(3).Package); ok {
		t.Fatal("refused app recorded")
	}
	// Deny 1 and allow 2; 3 becomes pending; table full (3 entries).
	for i, allow := range map[int]bool{1: false, 2: true} {
		if err := e.r.Set(context.Background(), app(i).Package, map[bool]callers.State{true: callers.StateAllowed, false: callers.StateDenied}[allow]); err != nil {
			t.Fatal(err)
		}
	}
	e.open(app(3))
	// A fourth app evicts the oldest DENIED (app1).
	if _, ref := e.open(app(4)); ref.Reason != callers.ReasonPending {
		t.Fatalf("fourth: %+v", ref)
	}
	if _, ok := e.item(app(1).Package); ok {
		t.Fatal("oldest denied not evicted")
	}
	// Nothing denied left to evict: refused.
	e.r.Set(context.Background(), app(3).Package, callers.StateAllowed)
	e.r.Set(context.Background(), app(4).Package, callers.StateAllowed)
	if _, ref := e.open(app(5)); ref.Reason != callers.ReasonNotOpen {
		t.Fatalf("full table: %+v", ref)
	}
}

func TestSignatureChangeRevokesGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{})
	_, ref := e.open(notes)
	e.r.Answer(ref.RequestID, true)
	var closed atomic.Int32
	if _, err := e.r.OpenChannel(notes, func() { closed.Add(1) }); err != nil {
		t.Fatal(err)
	}
	resigned := notes
	resigned.SigningDigest = digest(0xef)
	_, ref2 := e.open(resigned)
	if ref2 == nil || ref2.Reason != callers.ReasonPending {
		t.Fatalf("resigned open = %+v", ref2)
	}
	if closed.Load() != 1 {
		t.Fatalf("old channel closed %d times", closed.Load())
	}
	snap := e.r.List()
	if !snap.SignatureChanged[notes.Package] || snap.Callers[0].SigningDigest != resigned.SigningDigest ||
		snap.Callers[0].State != callers.StatePending || !snap.Cards[0].SignatureChanged {
		t.Fatalf("snapshot = %+v", snap)
	}
	// The old app (old digest) is not allowed either: the grant is gone.
	if _, ref := e.open(notes); ref == nil {
		t.Fatal("old signer still allowed")
	}
	// Nothing allowed survives a restart.
	e.reopen(callers.Config{})
	if _, ref := e.open(resigned); ref == nil || ref.Reason != callers.ReasonPending {
		t.Fatalf("after restart: %+v", ref)
	}
}

func TestRevokeClosesAndCancels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{})
	_, ref := e.open(notes)
	e.r.Answer(ref.RequestID, true)
	var closed atomic.Int32
	for _, uid := range []int{10100, 10300} { // seen with two uids (a reinstall)
		app := notes
		app.UID = uid
		if _, err := e.r.OpenChannel(app, func() { closed.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.r.Set(context.Background(), notes.Package, callers.StateDenied); err != nil {
		t.Fatal(err)
	}
	if closed.Load() != 2 {
		t.Fatalf("closed %d channels", closed.Load())
	}
	e.canc.mu.Lock()
	owners := slices.Sorted(slices.Values(e.canc.owners))
	e.canc.mu.Unlock()
	if !slices.Equal(owners, []string{"uid:10100", "uid:10300"}) {
		t.Fatalf("cancelled owners = %v", owners)
	}
	revs := e.r.List().Revocations
	if len(revs) != 1 || revs[0].PackageName != notes.Package || revs[0].ClosedChannels != 2 ||
		!slices.Equal(revs[0].CancelRequested, []string{"tsk_uid:10100", "tsk_uid:10300"}) || len(revs[0].Owners) != 2 {
		t.Fatalf("revocations = %+v", revs)
	}
	if it, _ := e.item(notes.Package); it.Usage.ActiveChannels != 0 || it.Usage.PromptsTotal != 6 {
		t.Fatalf("usage after revoke = %+v", it.Usage)
	}
	// Revoke after detach: no channel left, tasks still cancelled via uids.
	e.r.Set(context.Background(), notes.Package, callers.StateAllowed)
	e.r.Set(context.Background(), notes.Package, callers.StateDenied)
	revs = e.r.List().Revocations
	if last := revs[len(revs)-1]; last.ClosedChannels != 0 || len(last.CancelRequested) != 2 {
		t.Fatalf("revoke after detach = %+v", last)
	}
}

func TestPersistence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{})
	_, r1 := e.open(notes)
	_, r2 := e.open(sms)
	e.r.Answer(r1.RequestID, true)
	e.r.Answer(r2.RequestID, false)
	e.reopen(callers.Config{})
	if _, ref := e.open(notes); ref != nil {
		t.Fatalf("allowed lost: %v", ref)
	}
	if _, ref := e.open(sms); ref == nil || ref.Reason != callers.ReasonDenied {
		t.Fatalf("denied lost: %v", ref)
	}
	if it, _ := e.item(sms.Package); it.Label != "SMS" {
		t.Fatalf("label not cleaned: %q", it.Label)
	}

	// A corrupt main file: kept as .corrupt, the backup is used.
	main := filepath.Join(e.dir, callers.FileName)
	e.r.Set(context.Background(), sms.Package, callers.StateAllowed) // another write: the backup now holds both
	if err := os.WriteFile(main, []byte(`{"version":1,"callers":[{"packageName":`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.reopen(callers.Config{})
	if _, err := os.Stat(main + ".corrupt"); err != nil {
		t.Fatalf("corrupt file not kept: %v", err)
	}
	if _, ref := e.open(notes); ref != nil {
		t.Fatalf("backup not used: %v", ref)
	}
	if h := e.r.List().Health; !strings.Contains(h, "backup") {
		t.Fatalf("health = %q", h)
	}

	// Corrupt and no backup: empty table, everyone asked again.
	os.Remove(filepath.Join(e.dir, "callers.json.bak"))
	os.WriteFile(main, []byte("garbage"), 0o600)
	e.reopen(callers.Config{})
	if _, ref := e.open(notes); ref == nil || ref.Reason != callers.ReasonPending {
		t.Fatalf("corrupt without backup: %v", ref)
	}
}

// TestListShape pins the list item keys and their order for each state
// (spec §5.6) in a golden file.
func TestListShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callers.Config{})
	other := callers.App{UID: 10102, Package: "org.example.pending", Label: "Pending", SigningDigest: digest(0x11)}
	_, r1 := e.open(notes)
	_, r2 := e.open(sms)
	e.r.Answer(r1.RequestID, true)
	e.r.Answer(r2.RequestID, false)
	e.clock.Advance(time.Second)
	e.open(notes)
	e.open(other)
	snap := e.r.List()
	var lines []string
	for _, it := range snap.Callers {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := topKeys(b)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := json.Marshal(it.Usage)
		ukeys, _ := topKeys(u)
		lines = append(lines, fmt.Sprintf("%s: %s; usage: %s", it.State, strings.Join(keys, ","), strings.Join(ukeys, ",")))
	}
	got := []byte(strings.Join(lines, "\n") + "\n")
	golden := filepath.Join("testdata", "list_keys.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("list keys:\n%s\nwant:\n%s", got, want)
	}
}

// topKeys lists an object's keys in order.
func topKeys(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func TestParseFile(t *testing.T) {
	t.Parallel()
	good := `{"version":1,"callers":[{"packageName":"org.a","label":"A","signingDigest":"` + digest(1) +
		`","state":"allowed","firstSeenAt":1,"decidedAt":2,"uids":[10100]}]}`
	tests := []struct {
		name, data string
		ok         bool
	}{
		{"good", good, true},
		{"empty table", `{"version":1,"callers":[]}`, true},
		{"wrong version", strings.Replace(good, `"version":1`, `"version":2`, 1), false},
		{"unknown field", strings.Replace(good, `"label"`, `"x":1,"label"`, 1), false},
		{"pending persisted", strings.Replace(good, "allowed", "pending", 1), false},
		{"short digest", strings.Replace(good, digest(1), "abc", 1), false},
		{"upper digest", strings.Replace(good, digest(1), strings.ToUpper(digest(0xab)), 1), false},
		{"bad package", strings.Replace(good, "org.a", "org..a", 1), false},
		{"trailing", good + "{}", false},
		{"not json", "nope", false},
	}
	for _, tt := range tests {
		_, err := callers.ParseFile([]byte(tt.data), 64)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
		if err != nil && !errors.Is(err, callers.ErrCorrupt) {
			t.Errorf("%s: err %v is not ErrCorrupt", tt.name, err)
		}
	}
	dup := `{"version":1,"callers":[` + good[strings.Index(good, "[")+1:len(good)-2] + "," + good[strings.Index(good, "[")+1:len(good)-2] + `]}`
	if _, err := callers.ParseFile([]byte(dup), 64); err == nil {
		t.Error("duplicate package accepted")
	}
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"callers":[{"packageName":"org.a","label":"A","signingDigest":"` + digest(1) +
		`","state":"denied","firstSeenAt":1,"decidedAt":2,"deniedUntil":3}]}`))
	f.Add([]byte(`{"version":1,"callers":[]}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := callers.ParseFile(data, 64)
		if err != nil {
			return
		}
		// What parses must survive a round trip through a real registry.
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, callers.FileName), data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := callers.Open(&callers.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if got := len(r.List().Callers); got != len(recs) {
			t.Fatalf("%d records parsed, %d listed", len(recs), got)
		}
	})
}
