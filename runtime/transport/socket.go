package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentoslab/agentlab/internal/peercred"
)

// Cred is a peer's identity as the kernel reports it (SO_PEERCRED).
type Cred = peercred.Cred

// PeerCred returns the credentials of the process on the other end of a
// unix socket connection. It is the only identity the runtime trusts.
func PeerCred(c net.Conn) (Cred, error) {
	if _, ok := c.(*net.UnixConn); !ok {
		if pc, ok := c.(interface{ Cred() Cred }); ok {
			return pc.Cred(), nil
		}
	}
	cred, err := peercred.Of(c)
	if err != nil {
		return Cred{}, fmt.Errorf("peer cred: %w", err)
	}
	return cred, nil
}

// Conn is an accepted connection with the peer's credentials read at
// accept time, before a single byte was read from it.
type Conn struct {
	*net.UnixConn
	cred Cred
}

// Cred returns the peer's credentials.
func (c *Conn) Cred() Cred { return c.cred }

// Listener accepts unix-socket connections and reads each peer's
// credentials on accept.
type Listener struct {
	ln   *net.UnixListener
	name string
	path string // socket file to remove on Close; "" for abstract names
}

// ErrInUse means another process already listens on the name (a squatter
// or a second runtime). Abstract names cannot be taken over.
var ErrInUse = errors.New("transport: socket name already in use")

// Listen listens on name: "@x" is an abstract socket on Linux and Android
// (per network namespace, gone when the process exits); anything else is
// a filesystem path. A stale socket file (nobody answering) is replaced;
// a live one is ErrInUse.
func Listen(name string) (*Listener, error) {
	addr, path, err := resolve(name)
	if err != nil {
		return nil, err
	}
	if path != "" {
		if err := removeStale(path); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("listen %s: %w", name, err)
		}
	}
	ln, err := net.ListenUnix("unix", addr)
	if err != nil {
		if errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("listen %s: %w", name, ErrInUse)
		}
		return nil, fmt.Errorf("listen %s: %w", name, err)
	}
	if path != "" {
		ln.SetUnlinkOnClose(true)
	}
	return &Listener{ln: ln, name: name, path: path}, nil
}

// Accept waits for the next connection and reads its credentials. A
// connection whose credentials cannot be read is closed and skipped.
func (l *Listener) Accept() (*Conn, error) {
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return nil, err
		}
		cred, err := PeerCred(c)
		if err != nil {
			c.Close()
			continue
		}
		return &Conn{UnixConn: c, cred: cred}, nil
	}
}

// Addr returns the listener's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Name returns the name the listener was opened with.
func (l *Listener) Name() string { return l.name }

// Close stops listening (and removes a socket file).
func (l *Listener) Close() error { return l.ln.Close() }

// Dial connects to a unix socket by name ("@x" or a path).
func Dial(ctx context.Context, name string) (net.Conn, error) {
	addr, _, err := resolve(name)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr.String())
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", name, err)
	}
	return c, nil
}

// AbstractSupported reports whether "@name" sockets exist on this OS.
func AbstractSupported() bool { return runtime.GOOS == "linux" || runtime.GOOS == "android" }

func resolve(name string) (*net.UnixAddr, string, error) {
	if name == "" || name == "@" {
		return nil, "", errors.New("transport: empty socket name")
	}
	if strings.HasPrefix(name, "@") {
		if !AbstractSupported() {
			return nil, "", fmt.Errorf("transport: abstract socket %s needs Linux; configure a socket directory", name)
		}
		// Go maps a leading '@' to the abstract namespace on Linux.
		return &net.UnixAddr{Name: name, Net: "unix"}, "", nil
	}
	return &net.UnixAddr{Name: name, Net: "unix"}, name, nil
}

func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("listen %s: a non-socket file is in the way", path)
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
		return fmt.Errorf("listen %s: %w", path, ErrInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("listen %s: remove stale socket: %w", path, err)
	}
	return nil
}

// Names are the runtime's socket names (ARCHITECTURE.md "Sockets and
// identity"). Prefix lets several runtimes share one host in tests; Dir,
// when set, puts every socket in that directory instead of the abstract
// namespace (for systems without abstract sockets).
type Names struct {
	Prefix string
	Dir    string
}

func (n Names) name(base string) string {
	if n.Dir != "" || !AbstractSupported() {
		dir := n.Dir
		if dir == "" {
			dir = os.TempDir()
		}
		return filepath.Join(dir, n.Prefix+base+".sock")
	}
	return "@" + n.Prefix + base
}

// ACP is the desktop ACP socket (uid 0 and 2000 only; pairing first).
func (n Names) ACP() string { return n.name("agentos-acp") }

// Caller is the third-party caller channel.
func (n Names) Caller() string { return n.name("agentos-caller") }

// Admin is the owner-only control API.
func (n Names) Admin() string { return n.name("agentos-admin") }

// Console is the owner's web console (HTTP; uid 0, 2000 and the
// runtime's uid), reached by adb forward.
func (n Names) Console() string { return n.name("agentos-console") }

// Ext is the private socket between serve and the extension host.
func (n Names) Ext() string { return n.name("agentos-ext") }

// App is the socket a provider app serves MCP on for one of its servers.
func (n Names) App(pkg, server string) string { return n.name("agentos-app." + pkg + "." + server) }

// ACI is the socket a controlled app serves ACI on for one of its
// services ("@aci.<package>.<service>", runtime/aci/wire).
func (n Names) ACI(pkg, service string) string { return n.name("aci." + pkg + "." + service) }
