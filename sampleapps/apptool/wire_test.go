package apptool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestFit(t *testing.T) {
	item := strings.Repeat("x", 1000)
	build := func(k int) any {
		items := make([]string, k)
		for i := range items {
			items[i] = item
		}
		return map[string]any{"items": items}
	}
	k := Fit(200, build)
	if k <= 0 || k >= 200 {
		t.Fatalf("Fit = %d", k)
	}
	if WireCost(build(k)) > MaxWireChars || WireCost(build(k+1)) <= MaxWireChars {
		t.Fatalf("Fit = %d is not the largest fitting count", k)
	}
	if Fit(3, build) != 3 || Fit(0, build) != 0 {
		t.Fatal("small lists must fit whole")
	}
}

func TestWireCostCountsEscapes(t *testing.T) {
	plain := WireCost(map[string]string{"a": "xxxx"})
	quoted := WireCost(map[string]string{"a": `""""`})
	if quoted <= plain {
		t.Fatalf("quotes must cost more: %d vs %d", quoted, plain)
	}
}

func TestObjectSchema(t *testing.T) {
	got := ObjectSchema([]string{"id"},
		Prop{Name: "id", Type: "integer", Description: "Alarm id.", Minimum: Num(1)},
		Prop{Name: "days", Type: "array", Items: "string", ItemsEnum: []string{"mon", "tue"}},
		Prop{Name: "note", Type: "string", MaxLength: 5, Nullable: true},
	)
	want := `{"type":"object","properties":{"id":{"type":"integer","description":"Alarm id.","minimum":1},` +
		`"days":{"type":"array","items":{"type":"string","enum":["mon","tue"]}},"note":{"type":["string","null"],"maxLength":5}},` +
		`"required":["id"],"additionalProperties":false}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
}

func TestCallTool(t *testing.T) {
	tools := []Tool{
		{Name: "nothing", Handler: func(context.Context, json.RawMessage) (any, error) { return nil, nil }},
		{Name: "echo", Handler: func(_ context.Context, raw json.RawMessage) (any, error) {
			a, err := ParseArgs(raw)
			if err != nil {
				return nil, err
			}
			s := a.String("s", Required)
			if err := a.Err(); err != nil {
				return nil, err
			}
			return map[string]string{"s": s}, nil
		}},
	}
	tests := []struct {
		args []string
		want string
		err  error
	}{
		{[]string{"nothing"}, `{"result":null}`, nil},
		{[]string{"echo", `{"s":"a<b"}`}, `{"result":{"s":"a<b"}}`, nil},
		{[]string{"echo", `{}`}, `{"error":"Missing required parameter \"s\".","isError":true}`, nil},
		{[]string{"echo", `[1]`}, `{"error":"Arguments must be a JSON object.","isError":true}`, nil},
		{[]string{}, "", ErrUsage},
	}
	for _, tt := range tests {
		o, err := CallTool(context.Background(), tools, tt.args)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%v: err %v", tt.args, err)
			}
			continue
		}
		got, _ := Compact(o)
		if err != nil || got != tt.want {
			t.Errorf("%v: got %s (%v), want %s", tt.args, got, err, tt.want)
		}
	}
	if _, err := CallTool(context.Background(), tools, []string{"nope"}); err == nil {
		t.Fatal("unknown tool accepted")
	} else if s, _ := IsUserError(err); s != `Unknown tool "nope".` {
		t.Fatalf("unknown tool: %q", s)
	}
}
