package errcode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestTableMatchesSpec checks the table row by row against the spec's
// machine-readable copy of §3 (testdata/error_codes.json, copied from
// shared/spec/testdata).
func TestTableMatchesSpec(t *testing.T) {
	raw, err := os.ReadFile("testdata/error_codes.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec []struct {
		AgentosCode string `json:"agentosCode"`
		JSONRPCCode int    `json:"jsonRpcCode"`
		Retryable   bool   `json:"retryable"`
		Kind        string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec) != len(table) {
		t.Fatalf("table has %d rows, spec has %d", len(table), len(spec))
	}
	for i, want := range spec {
		got := table[i]
		if string(got.Code) != want.AgentosCode || got.RPC != want.JSONRPCCode ||
			got.Retryable != want.Retryable || string(got.Kind) != want.Kind {
			t.Errorf("row %d: got %+v, spec %+v", i, got, want)
		}
	}
}

func TestWireShape(t *testing.T) {
	e := New(ModelRateLimited, "provider returned 429").
		WithSession("ses_01").WithTask("tsk_01").
		WithDetails(map[string]any{"status": 429, "retryAfterSeconds": 20})
	b, err := json.Marshal(e.Wire())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":-32051,"message":"model_rate_limited: provider returned 429","data":{"agentosCode":"model_rate_limited","retryable":true,"sessionId":"ses_01","taskId":"tsk_01","details":{"retryAfterSeconds":20,"status":429}}}`
	if string(b) != want {
		t.Fatalf("wire:\n got %s\nwant %s", b, want)
	}
}

func TestMatching(t *testing.T) {
	base := New(Busy, "queue is full")
	wrapped := fmt.Errorf("submit: %w", base)
	if !errors.Is(wrapped, Busy) {
		t.Error("errors.Is(wrapped, Busy) = false")
	}
	if errors.Is(wrapped, QuotaExceeded) {
		t.Error("errors.Is(wrapped, QuotaExceeded) = true")
	}
	if CodeOf(wrapped) != Busy {
		t.Errorf("CodeOf = %q", CodeOf(wrapped))
	}
	if got := From(errors.New("disk on fire")); got.Code != Internal || got.Text != "internal error" {
		t.Errorf("From(plain) = %+v; must be internal without the cause's text", got)
	}
	if got := From(context.Canceled); got.Code != Internal {
		t.Errorf("From(Canceled) = %v", got.Code)
	}
	cause := errors.New("secret-bearing cause")
	w := Wrap(StoreFailed, "could not write the session", cause)
	if !errors.Is(w, cause) {
		t.Error("Wrap lost its cause")
	}
	if b, _ := json.Marshal(w.Wire()); strings.Contains(string(b), "secret") {
		t.Errorf("cause leaked to the wire: %s", b)
	}
}

func TestParseUnknownIsInternal(t *testing.T) {
	if Parse("no_such_code") != Internal {
		t.Error("unknown wire code must parse as internal")
	}
	if Parse("busy") != Busy {
		t.Error("busy must parse as busy")
	}
	if Code("nope").RPC() != -32603 {
		t.Error("unknown code must use internal's rpc code")
	}
}

func TestToolText(t *testing.T) {
	got := ToolText(ToolDenied, "The user declined this tool call.")
	if got != "[agentos:tool_denied] The user declined this tool call." {
		t.Fatal(got)
	}
}
