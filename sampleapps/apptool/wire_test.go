package apptool

import (
	"encoding/json"
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
