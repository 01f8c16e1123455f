package bridge

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

// agentosdBin is agentosd built once for this test binary.
var agentosdBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func agentosd(t *testing.T) string {
	t.Helper()
	agentosdBin.once.Do(func() {
		agentosdBin.dir, agentosdBin.err = os.MkdirTemp("", "agentlab-bridge-agentosd-")
		if agentosdBin.err != nil {
			return
		}
		agentosdBin.path = filepath.Join(agentosdBin.dir, "agentosd")
		cmd := exec.Command("go", "build", "-o", agentosdBin.path, "github.com/agentoslab/agentlab/runtime/cmd/agentosd")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentosdBin.err = err
			agentosdBin.path = string(out)
		}
	})
	if agentosdBin.err != nil {
		t.Fatalf("go build agentosd: %v\n%s", agentosdBin.err, agentosdBin.path)
	}
	return agentosdBin.path
}

// runtime is a real `agentosd serve` on this host with its own socket
// prefix.
type runtime struct {
	bin, prefix string
}

func startRuntime(t *testing.T) *runtime {
	t.Helper()
	testenv.NeedRoot(t)
	bin := agentosd(t)
	var r [4]byte
	rand.Read(r[:])
	rt := &runtime{bin: bin, prefix: "labbr" + hex.EncodeToString(r[:]) + "."}
	cmd := exec.Command(bin, "serve", "--data", t.TempDir(), "--socket-prefix", rt.prefix, "--log-level", "warn")
	logf, _ := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("serve.log:\n%s", b)
		}
	})
	require.Eventually(t, func() bool {
		_, err := rt.ctl(t, "status")
		return err == nil
	}, 5*time.Second, 5*time.Millisecond, "waiting for agentosd serve to answer ctl status")
	return rt
}

func (rt *runtime) ctl(t *testing.T, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, rt.bin, append([]string{"ctl", "--socket-prefix", rt.prefix, "--json"}, args...)...).Output()
}

// TestAgainstAgentosd pairs with a real runtime's desktop access and
// carries ACP through to it.
func TestAgainstAgentosd(t *testing.T) {
	rt := startRuntime(t)
	out, err := rt.ctl(t, "desktop", "enable")
	if err != nil {
		t.Fatalf("desktop enable: %v %s", err, out)
	}
	var code struct{ Code string }
	if err := json.Unmarshal(out, &code); err != nil || len(code.Code) != 6 {
		t.Fatalf("desktop enable answered %s", out)
	}
	o := opts(t, "unix:"+transport.Names{Prefix: rt.prefix}.ACP(), filepath.Join(t.TempDir(), "state.json"))
	if r := doPair(t, o, code.Code); r.err != nil {
		t.Fatalf("pair: %v", r.err)
	}
	out, _ = rt.ctl(t, "desktop", "list")
	if !strings.Contains(string(out), `"test-laptop"`) {
		t.Errorf("the runtime does not list the pairing: %s", out)
	}

	// ACP through the bridge: initialize answers with the protocol version.
	pr, pw := io.Pipe()
	stdout, sw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		ro := o
		ro.Stdin, ro.Stdout, ro.Stderr = pr, sw, io.Discard
		done <- Run(context.Background(), ro)
		sw.Close()
	}()
	pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"))
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	var resp struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion int `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.ID != 1 || resp.Result.ProtocolVersion != 1 {
		t.Errorf("initialize answered %s", line)
	}
	pw.Close()
	go io.Copy(io.Discard, stdout)
	if err := <-done; err != nil {
		t.Errorf("bridge: %v", err)
	}

	// Desktop access off: the stored token no longer gets in.
	if out, err := rt.ctl(t, "desktop", "disable"); err != nil {
		t.Fatalf("desktop disable: %v %s", err, out)
	}
	if r := doRun(t, o, strings.NewReader("")); ExitCode(r.err) != ExitNotListening {
		t.Errorf("after desktop disable: %v", r.err)
	}
}
