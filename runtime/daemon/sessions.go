package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/store"
)

// maxHistoryEvents bounds sessions.history.
const maxHistoryEvents = 500

// sessionMethods are the sessions.* admin methods: the owner's list of
// sessions and one session's history, read from the store.
func sessionMethods(st *store.Store) []admin.Method {
	return []admin.Method{
		{Name: "sessions.history", Perm: admin.Owner, Summary: "one session's events (the newest 500)", Handle: func(ctx context.Context, c *admin.Call) (any, error) {
			var p struct {
				ID string `json:"id"`
			}
			if err := c.Decode(&p); err != nil {
				return nil, err
			}
			if _, err := st.Session(ctx, p.ID); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return nil, errcode.New(errcode.SessionNotFound, "no session "+p.ID)
				}
				return nil, errcode.Wrap(errcode.StoreFailed, "the session could not be read", err)
			}
			last, err := st.LastSeq(ctx, p.ID)
			if err != nil {
				return nil, errcode.Wrap(errcode.StoreFailed, "the history could not be read", err)
			}
			evs, err := st.Events(ctx, p.ID, max(0, last-maxHistoryEvents), maxHistoryEvents)
			if err != nil {
				return nil, errcode.Wrap(errcode.StoreFailed, "the history could not be read", err)
			}
			out := make([]map[string]any, 0, len(evs))
			for _, e := range evs {
				out = append(out, map[string]any{"seq": e.Seq, "taskId": e.TaskID, "type": e.Type, "at": e.At.UnixMilli(), "body": json.RawMessage(e.Body)})
			}
			return out, nil
		}},
		{Name: "sessions.list", Perm: admin.Owner, Summary: "sessions, most recent first", Handle: func(ctx context.Context, c *admin.Call) (any, error) {
			if err := c.Decode(&struct{}{}); err != nil {
				return nil, err
			}
			ss, err := st.ListSessions(ctx, store.ListQuery{})
			if err != nil {
				return nil, errcode.Wrap(errcode.StoreFailed, "the sessions could not be read", err)
			}
			out := make([]map[string]any, 0, len(ss))
			for _, s := range ss {
				out = append(out, map[string]any{"id": s.ID, "title": s.Title, "callerKind": s.CallerKind, "owner": s.OwnerKey,
					"state": s.State, "cwd": s.Cwd, "mode": s.Mode, "createdAt": s.CreatedAt.UnixMilli(), "updatedAt": s.UpdatedAt.UnixMilli()})
			}
			return out, nil
		}},
	}
}

// sessionVerbs are the `agentosd ctl sessions …` verbs.
func sessionVerbs() []admin.Verb {
	return []admin.Verb{
		{Group: "sessions", Name: "list", Method: "sessions.list", Summary: "list sessions"},
		{Group: "sessions", Name: "history", Method: "sessions.history", Args: "ID", Summary: "one session's events",
			Params: func(args []string, _ io.Reader) (any, error) {
				if len(args) != 1 {
					return nil, admin.Usagef("expected a session id")
				}
				return map[string]string{"id": args[0]}, nil
			}},
	}
}
