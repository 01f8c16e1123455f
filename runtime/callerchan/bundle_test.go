package callerchan_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
)

// TestInstalledBundle: the app helper is packed as a signed bundle,
// installed with the real installer (uid allocated), found through the
// package table by its uid, authorized, and served; an upgrade by another
// signer revokes its grant at once through the table's change feed.
func TestInstalledBundle(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	dir, err := os.MkdirTemp("", "callerchan-apps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	appsDir := filepath.Join(dir, "apps")
	in, err := apps.OpenInstaller(appsDir, &apps.InstallerOptions{FirstUID: 30100, LastUID: 30199,
		AndroidPackagesList: filepath.Join(dir, "none"), PasswdFile: filepath.Join(dir, "none")})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	bin, err := os.ReadFile(helperBin)
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "org.agentos.test.acp.client"
	install := func(version int64, key ed25519.PrivateKey) apps.Package {
		src := fstest.MapFS{
			"app.json": {Data: []byte(fmt.Sprintf(`{"package":%q,"label":"ACP Test Client","versionCode":%d,"binary":"client","caller":true}`, pkg, version))},
			apps.BinaryPath(apps.HostABI(), "client"): {Data: bin, Mode: 0o755},
		}
		path := filepath.Join(dir, fmt.Sprintf("client-%d.agentapp", version))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := apps.Pack(context.Background(), src, key, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		res, err := in.Install(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return res.Package
	}
	key1, _ := apps.GenerateKey()
	p := install(1, key1)

	table, err := apps.OpenTable(appsDir, &apps.TableOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	rt := newRuntimeLookup(t, callers.Config{}, callerchan.TableLookup(table))
	ctx, cancel := context.WithCancel(context.Background())
	follow := make(chan struct{})
	go func() { defer close(follow); callerchan.FollowTable(ctx, table, rt.reg, rt.quota.Forget) }()
	defer func() { cancel(); <-follow }()

	h := rt.startAppBinary(p.UID, p.BinaryPath())
	reason, id, _ := openLine(h.do(map[string]any{"op": "raw"}))
	it, _ := rt.item(pkg)
	if reason != "authorization_pending" || it.SigningDigest != p.SigningDigest || it.Label != "ACP Test Client" {
		t.Fatalf("first open: %s %+v", reason, it)
	}
	rt.reg.Answer(id, true)
	if r := h.do(map[string]any{"op": "connect"}); r.Err != nil {
		t.Fatalf("connect: %+v", r.Err)
	}
	s := h.do(map[string]any{"op": "new"})
	if pr := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "hi"}); done(pr.Events) != "end_turn" {
		t.Fatalf("prompt: %+v", pr)
	}

	key2, _ := apps.GenerateKey()
	p2 := install(2, key2)
	if p2.UID != p.UID || p2.SigningDigest == p.SigningDigest {
		t.Fatalf("upgrade: %+v", p2)
	}
	if d := h.do(map[string]any{"op": "waitDone"}); d.Err != nil {
		t.Fatalf("channel not closed after the signer changed: %+v", d.Err)
	}
	reason, _, _ = openLine(h.do(map[string]any{"op": "raw"}))
	if reason != "authorization_pending" || !rt.reg.List().SignatureChanged[pkg] {
		t.Fatalf("after resign: %s %+v", reason, rt.reg.List())
	}
}
