package daemon

import (
	"context"
	"io"
	"os"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// stdioConn joins stdin and stdout into one connection. Close closes
// stdin only: answers to what was read may still be written after the
// input ended; stdout is closed when the process exits.
type stdioConn struct {
	io.Reader
	io.Writer
}

func (c stdioConn) Close() error {
	if cl, ok := c.Reader.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// Stdio runs `agentosd stdio`: the core of the System (no doors for
// others, no extension host) and ACP on in and out as caller DESKTOP
// (owner key "desktop", uid the process's own). Without a usable model a
// prompt that is a script document (#!agentos-script) runs on the
// scripted provider. When in ends, the requests already read are still
// answered (a prompt streams to its end), and tasks keep running: Stdio
// waits until no task is queued or running (or ctx ends, e.g. SIGTERM,
// which cancels them) and then closes the runtime. A process killed
// meanwhile leaves its running tasks to the next start's recovery.
func Stdio(ctx context.Context, opts *Options, in io.Reader, out io.Writer) error {
	s, err := open(ctx, opts, true)
	if err != nil {
		return err
	}
	stream := transport.NewRPCStream(stdioConn{Reader: in, Writer: out}, nil)
	caller := engine.Caller{Kind: engine.CallerDesktop, UID: os.Getuid(), Label: "desktop"}
	s.Agent.Serve(ctx, caller, stream)
	if ctx.Err() == nil {
		s.log.Info("input ended; waiting for running tasks")
		select {
		case <-s.Engine.Idle():
		case <-ctx.Done():
		}
	}
	return s.Close(ctx)
}
