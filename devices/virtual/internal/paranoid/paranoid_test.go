//go:build linux

package paranoid

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/internal/testenv"
)

// The test binary plays three parts: the test; an "init" that installs
// the filter and starts probes under other credentials; a probe that
// tries each socket family and prints what happened.
const envRole = "PARANOID_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "init":
		os.Exit(runInit())
	case "probe":
		os.Exit(runProbe())
	}
	os.Exit(testbin.Main(m))
}

func runProbe() int {
	var out []string
	for _, f := range []struct {
		name string
		af   int
		typ  int
	}{{"inet", unix.AF_INET, unix.SOCK_STREAM}, {"inet6", unix.AF_INET6, unix.SOCK_DGRAM}, {"unix", unix.AF_UNIX, unix.SOCK_STREAM}} {
		fd, err := unix.Socket(f.af, f.typ, 0)
		if err != nil {
			out = append(out, f.name+"="+err.Error())
			continue
		}
		unix.Close(fd)
		out = append(out, f.name+"=ok")
	}
	fmt.Println(strings.Join(out, " "))
	return 0
}

// runInit installs the filter, serves it, and runs one probe per
// credential set given in argv ("uid:gid:group,group").
func runInit() int {
	e, err := Install(nil)
	if err != nil {
		fmt.Println("install:", err)
		return 2
	}
	go e.Serve()
	self, _ := os.Executable() // the staged copy: reachable by every uid
	for _, spec := range os.Args[1:] {
		var uid, gid int
		var groups string
		fmt.Sscanf(strings.ReplaceAll(spec, ":", " "), "%d %d %s", &uid, &gid, &groups)
		cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		for _, g := range strings.Split(groups, ",") {
			var n uint32
			if _, err := fmt.Sscan(g, &n); err == nil && g != "-" {
				cred.Groups = append(cred.Groups, n)
			}
		}
		cmd := exec.Command(self)
		cmd.Env = []string{envRole + "=probe"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		b, err := cmd.CombinedOutput()
		if err != nil {
			fmt.Printf("%s: %v %s\n", spec, err, b)
			continue
		}
		fmt.Printf("%s: %s", spec, b)
	}
	// init itself (root) is filtered too and allowed.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		fmt.Println("self:", err)
	} else {
		unix.Close(fd)
		fmt.Println("self: inet=ok")
	}
	return 0
}

// The rule of CONFIG_ANDROID_PARANOID_NETWORK: AF_INET and AF_INET6 need
// euid 0 or the inet or net_raw group; unix sockets need nothing.
func TestParanoidNetwork(t *testing.T) {
	testenv.NeedRoot(t)
	// A copy of the test binary the probe uids can run.
	self, err := testbin.Self()
	require.NoError(t, err)
	cmd := exec.Command(self, "10123:10123:-", "10124:10124:3003", "10125:10125:1015,3004", "10126:3003:-", "0:0:-", "2000:2000:1004,3003")
	cmd.Env = []string{envRole + "=init"}
	b, err := cmd.CombinedOutput()
	out := string(b)
	if strings.HasPrefix(out, "install:") {
		t.Skipf("this kernel cannot run the filter: %s", out)
	}
	require.NoError(t, err, out)
	denied := "inet=permission denied inet6=permission denied unix=ok"
	allowed := "inet=ok inet6=ok unix=ok"
	for spec, want := range map[string]string{
		"10123:10123:-":         denied,  // an app uid without the group
		"10124:10124:3003":      allowed, // inet as a supplementary group
		"10125:10125:1015,3004": allowed, // net_raw
		"10126:3003:-":          allowed, // inet as the effective gid
		"0:0:-":                 allowed, // root
		"2000:2000:1004,3003":   allowed, // adb shell's groups
	} {
		assert.Contains(t, out, spec+": "+want+"\n", "probe %s", spec)
	}
	assert.Contains(t, out, "self: inet=ok")
}

func TestHasNetwork(t *testing.T) {
	ok, why := HasNetwork(os.Getpid())
	if os.Geteuid() == 0 {
		assert.True(t, ok, why)
	}
	ok, why = HasNetwork(1 << 30)
	assert.False(t, ok)
	assert.NotEmpty(t, why)
}
