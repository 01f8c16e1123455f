package browser_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/lab/testsite"
	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/internal/appbundle"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// The browser as it ships: packed as a signed bundle, installed, started
// by the launcher as its own uid on "@aci.<package>.browser", and called
// over ACI by a client that checks that uid — the path the runtime takes.
func TestBundleServesACIAsTheAppUID(t *testing.T) {
	testenv.NeedRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	set, err := appbundle.New(apptest.OpenDir(t), nil)
	require.NoError(t, err)
	bundle, err := set.Bundle(ctx, "browser")
	require.NoError(t, err)
	assert.Equal(t, apps.ServiceKindACI, bundle.Manifest.App.Services[0].Kind)

	root := apptest.OpenDir(t)
	in, err := apps.OpenInstaller(filepath.Join(root, "apps"), &apps.InstallerOptions{
		AndroidPackagesList: filepath.Join(root, "none"), PasswdFile: filepath.Join(root, "none"), FirstUID: 10500, LastUID: 10599})
	require.NoError(t, err)
	defer in.Close()
	names := transport.Names{Prefix: fmt.Sprintf("b%d-", os.Getpid())}
	l, err := launcher.NewServer(&launcher.Options{Installer: in, Names: names, StartTimeout: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	defer l.Close()
	res, err := l.Install(ctx, bundle.Path)
	require.NoError(t, err)
	pkg := res.Package

	p, err := l.StartService(ctx, pkg.Name, "browser")
	require.NoError(t, err)
	assert.Equal(t, names.ACI(pkg.Name, "browser"), p.Socket)

	site := httptest.NewServer(testsite.Handler())
	defer site.Close()
	cl := &wire.Client{Socket: p.Socket, UID: pkg.UID, CallerPkg: "org.agentos.sample.notes"}
	caps, problems, err := cl.Capabilities(ctx)
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Len(t, caps, 31)
	resp, err := cl.Call(ctx, "browser_open", wire.Bundle{"url": wire.String(site.URL + "/page/a")}, 20*time.Second)
	require.NoError(t, err)
	require.NoError(t, resp.Err())
	assert.True(t, resp.Result["ready"].BoolVal())
	resp, err = cl.Call(ctx, "browser_info", nil, 0)
	require.NoError(t, err)
	assert.Equal(t, pkg.Name, resp.Result["package"].Str(), "the launcher's AGENTOS_PACKAGE")

	// Anyone else's uid on the name is refused before a byte is sent.
	squat := &wire.Client{Socket: p.Socket, UID: pkg.UID + 1}
	_, err = squat.Call(ctx, "browser_info", nil, 0)
	assert.ErrorIs(t, err, wire.ErrPeerUID)
}
