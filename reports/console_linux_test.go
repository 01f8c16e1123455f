package reports

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of the given width and returns its
// terminal side and a function that closes it and returns everything
// written to it.
func openPTY(t *testing.T, cols uint16) (*os.File, func() string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: cols}); err != nil {
		t.Fatal(err)
	}
	// Drain the other side while the test writes: a pty buffers only a few
	// KiB.
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&out, m) // ends with EIO once the terminal side is closed
	}()
	return s, func() string {
		s.Close()
		<-done
		return strings.ReplaceAll(out.String(), "\r\n", "\n")
	}
}

// TestConsoleOnTerminal writes to a real pseudo-terminal: colour appears
// unless NO_COLOR is set, and the table takes the terminal's width.
func TestConsoleOnTerminal(t *testing.T) {
	// Not parallel: it sets NO_COLOR.
	tests := []struct {
		noColor   string
		wantColor bool
	}{
		{"", true},
		{"1", false},
	}
	for _, tc := range tests {
		t.Run("NO_COLOR="+tc.noColor, func(t *testing.T) {
			t.Setenv("NO_COLOR", tc.noColor)
			term, finish := openPTY(t, 72)
			if err := Render(term, sampleRun(), FormatConsole); err != nil {
				t.Fatal(err)
			}
			out := finish()
			if got := strings.Contains(out, "\x1b["); got != tc.wantColor {
				t.Errorf("colour = %v, want %v:\n%s", got, tc.wantColor, out)
			}
			plain := out
			for _, code := range []string{"\x1b[0m", "\x1b[1;31m", "\x1b[35m", "\x1b[33m", "\x1b[32m", "\x1b[2m"} {
				plain = strings.ReplaceAll(plain, code, "")
			}
			table := strings.SplitN(plain, "\n", 4)[3]
			if w := widest(table); w > 72 || w < 66 {
				t.Errorf("table is %d cells wide on a 72-column terminal:\n%s", w, plain)
			}
		})
	}
}
