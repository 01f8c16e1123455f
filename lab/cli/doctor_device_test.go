package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// phone is a scripted device: shell and su answers by command prefix.
type phone struct {
	devices.Device
	info  devices.Info
	free  int64
	shell map[string]string // command prefix → stdout (exit 0)
	su    map[string]string
}

func (p *phone) Serial() string { return "R5CT30TEST" }
func (p *phone) Info(context.Context) (devices.Info, error) {
	return p.info, nil
}
func (p *phone) FreeStorage(context.Context, string) (int64, error) { return p.free, nil }
func answer(m map[string]string, cmd string) (devices.Result, error) {
	for prefix, out := range m {
		if strings.HasPrefix(cmd, prefix) {
			return devices.Result{Stdout: []byte(out)}, nil
		}
	}
	return devices.Result{ExitCode: 127}, nil
}
func (p *phone) Shell(_ context.Context, cmd string) (devices.Result, error) {
	return answer(p.shell, cmd)
}
func (p *phone) Su(_ context.Context, cmd string) (devices.Result, error) { return answer(p.su, cmd) }

func probeJSON(t *testing.T, p platform.Probe) string {
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return string(b)
}

// A healthy phone passes every check; each broken part fails its own
// check with the fix that mends it.
func TestDiagnoseDevice(t *testing.T) {
	good := platform.Probe{Platform: platform.Info{Android: true, TimeZone: "Asia/Shanghai", TZData: "/apex/com.android.tzdata/etc/tz/tzdata (2025b)", Resolver: "dnsproxyd"},
		UID: 19999, Groups: []int{3003},
		Lookup: &platform.ProbeLookup{Host: "connectivitycheck.gstatic.com", Addrs: []string{"142.250.0.1"}},
		Fetch:  &platform.ProbeFetch{URL: defaultProbeURL, Status: 204}}
	healthy := func() *phone {
		return &phone{
			info:  devices.Info{Model: "Pixel 9", Product: "tokay", APILevel: 35, ABI: "arm64-v8a", Root: devices.RootMagisk, RootVersion: "28.1:MAGISKSU"},
			free:  8 << 30,
			shell: map[string]string{"getenforce": "Enforcing\n", "getprop persist.sys.timezone": "Asia/Shanghai\n"},
			su: map[string]string{
				"magisk -V":                  "28100\n",
				"cat " + moduleDir:           "id=agentos\nversion=1.4.0\nversionCode=140\nmodule.prop\nbin\n",
				"cat " + supervisorState:     "protocol=1\nstate=ok\n",
				moduleAgentosd + " platform": probeJSON(t, good),
			},
		}
	}
	for _, tc := range []struct {
		name    string
		breakIt func(p *phone)
		failing string // the one check that fails ("" none)
		fix     string
	}{
		{name: "healthy"},
		{name: "old API", breakIt: func(p *phone) { p.info.APILevel = 33 }, failing: "api-level", fix: "API 35–37"},
		{name: "no root", breakIt: func(p *phone) { p.info.Root = devices.RootNone }, failing: "root", fix: "install Magisk"},
		{name: "old Magisk", breakIt: func(p *phone) { p.su["magisk -V"] = "20300\n" }, failing: "root", fix: "update Magisk"},
		{name: "full storage", breakIt: func(p *phone) { p.free = 100 << 20 }, failing: "data-free", fix: "free at least 300 MB"},
		{name: "module disabled", breakIt: func(p *phone) { p.su["cat "+moduleDir] = "id=agentos\nversion=1.4.0\ndisable\nmodule.prop\n" },
			failing: "module", fix: "enable AgentOS"},
		{name: "no inet group", breakIt: func(p *phone) {
			g := good
			g.Groups = []int{}
			p.su[moduleAgentosd+" platform"] = probeJSON(t, g)
		}, failing: "network-permission", fix: "update the module"},
		{name: "netd cannot resolve", breakIt: func(p *phone) {
			g := good
			g.Lookup = &platform.ProbeLookup{Host: "connectivitycheck.gstatic.com", Error: "lookup connectivitycheck.gstatic.com on dnsproxyd: dnsproxyd: EAI_NODATA"}
			p.su[moduleAgentosd+" platform"] = probeJSON(t, g)
		}, failing: "dns", fix: "setprop persist.agentos.fallback_dns"},
		{name: "no HTTPS", breakIt: func(p *phone) {
			g := good
			g.Fetch = &platform.ProbeFetch{URL: defaultProbeURL, Error: "x509: certificate signed by unknown authority"}
			p.su[moduleAgentosd+" platform"] = probeJSON(t, g)
		}, failing: "https", fix: "captive portal"},
		{name: "runtime in UTC", breakIt: func(p *phone) {
			g := good
			g.Platform.TimeZone = "UTC"
			p.su[moduleAgentosd+" platform"] = probeJSON(t, g)
		}, failing: "time-zone", fix: "update the module"},
		{name: "no zone set", breakIt: func(p *phone) { p.shell["getprop persist.sys.timezone"] = "\n" }, failing: "time-zone", fix: "Date & time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := healthy()
			if tc.breakIt != nil {
				tc.breakIt(p)
			}
			checks := diagnoseDevice(context.Background(), p, defaultProbeURL, nil)
			names := []string{}
			for _, c := range checks {
				names = append(names, c.Name)
				if c.Name == tc.failing {
					assert.False(t, c.OK, "%s should fail: %+v", c.Name, c)
					assert.Contains(t, c.Fix, tc.fix)
					continue
				}
				if tc.name == "no root" && c.Name == "module" {
					continue // not checked without root
				}
				if tc.name == "no root" && (c.Name == "network-permission" || c.Name == "dns" || c.Name == "https" || c.Name == "time-zone") {
					assert.False(t, c.OK, "%s without root", c.Name)
					continue
				}
				assert.True(t, c.OK, "%s: %+v", c.Name, c)
			}
			assert.Equal(t, []string{"device", "api-level", "root", "selinux", "data-free", "module", "network-permission", "dns", "https", "time-zone"}, names)
		})
	}
}

// On a virtual device the doctor asks for the lab's published name and
// skips HTTPS (loopback only) and SELinux (none).
func TestDiagnoseVirtualDevice(t *testing.T) {
	var asked string
	probe := platform.Probe{Platform: platform.Info{Android: true, TimeZone: "Asia/Shanghai", TZData: "embedded", Resolver: "dnsproxyd"},
		UID: 19999, Groups: []int{3003}, Lookup: &platform.ProbeLookup{Host: "model.agentlab.test", Addrs: []string{"127.0.0.1"}}}
	p := &phone{info: devices.Info{Model: "AgentLab Virtual Device", Product: "agentlab_vdev", APILevel: 35, ABI: "x86_64", Root: devices.RootMagisk},
		free: 8 << 30, shell: map[string]string{"getprop persist.sys.timezone": "Asia/Shanghai"},
		su: map[string]string{"magisk -V": "27000", "cat " + moduleDir: "id=agentos\nversion=dev\n", "cat " + supervisorState: "state=ok\n"}}
	p.su[moduleAgentosd+" platform"] = probeJSON(t, probe)
	checks := diagnoseDevice(context.Background(), &recording{phone: p, last: &asked}, defaultProbeURL, []string{"model.agentlab.test"})
	for _, c := range checks {
		assert.True(t, c.OK, "%s: %+v", c.Name, c)
	}
	assert.Contains(t, asked, "--lookup 'model.agentlab.test' --fetch ''")
}

type recording struct {
	*phone
	last *string
}

func (r *recording) Su(ctx context.Context, cmd string) (devices.Result, error) {
	if strings.HasPrefix(cmd, moduleAgentosd) {
		*r.last = cmd
	}
	return r.phone.Su(ctx, cmd)
}
