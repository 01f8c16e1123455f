package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// AdminFunc is an Admin from a function (the composition root binds the
// admin server built after the console).
type AdminFunc func(ctx context.Context, peer transport.Cred, method string, params any) (json.RawMessage, error)

// Invoke calls f.
func (f AdminFunc) Invoke(ctx context.Context, peer transport.Cred, method string, params any) (json.RawMessage, error) {
	return f(ctx, peer, method, params)
}

// URLInfo is console.url's result: the socket to forward to and the
// path (with this start's token) to open on the forwarded port.
type URLInfo struct {
	Socket string `json:"socket"`
	Path   string `json:"path"`
}

// AdminMethods are the console.* admin methods: the owner (root, shell,
// the runtime) asks for the link; anyone else never learns the token.
func AdminMethods(s *Server) []admin.Method {
	return []admin.Method{{Name: "console.url", Perm: admin.Owner, Summary: "the web console's socket and the path with this start's token",
		Handle: func(_ context.Context, c *admin.Call) (any, error) {
			if err := c.Decode(&struct{}{}); err != nil {
				return nil, err
			}
			return URLInfo{Socket: s.Name(), Path: s.Path()}, nil
		}}}
}

// CtlVerbs are the `agentosd ctl console …` verbs.
func CtlVerbs() []admin.Verb {
	return []admin.Verb{{Group: "console", Name: "url", Method: "console.url",
		Summary: "the web console's socket and tokened path (adb forward tcp:N localabstract:NAME)",
		Text: func(w io.Writer, raw json.RawMessage) error {
			var u URLInfo
			if err := json.Unmarshal(raw, &u); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "socket %s\npath   %s\n", u.Socket, u.Path)
			return err
		}}}
}
