package apptool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

func TestRun(t *testing.T) {
	ok := Tool{Name: "t_ok", Handler: func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"a": "<b>&", "n": 1}, nil
	}}
	if r := Run(context.Background(), ok, nil); r.IsError || r.Text != `{"a":"<b>&","n":1}` {
		t.Errorf("ok: %+v", r)
	}
	user := Tool{Name: "t_user", Handler: func(context.Context, json.RawMessage) (any, error) {
		return nil, Errorf("No alarm with id %d", 7)
	}}
	if r := Run(context.Background(), user, nil); !r.IsError || r.Text != "No alarm with id 7" {
		t.Errorf("user: %+v", r)
	}
	bug := Tool{Name: "t_bug", Handler: func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("sql: database is locked at /secret/path")
	}}
	if r := Run(context.Background(), bug, nil); !r.IsError || r.Text != "t_bug failed." {
		t.Errorf("bug: %+v", r)
	}
	boom := Tool{Name: "t_panic", Handler: func(context.Context, json.RawMessage) (any, error) {
		var m map[string]int
		m["x"] = 1
		return nil, nil
	}}
	if r := Run(context.Background(), boom, nil); !r.IsError || r.Text != "t_panic failed." {
		t.Errorf("panic: %+v", r)
	}
}
