package apptool

import (
	"bytes"
	"encoding/json"
)

// Prop is one property of a tool's input schema.
type Prop struct {
	Name        string
	Type        string // "string", "integer", "number", "boolean", "array"
	Description string
	Enum        []string
	Pattern     string
	Minimum     *float64
	Maximum     *float64
	MaxLength   int
	// Items is the element type of an array ("string", "integer").
	Items     string
	ItemsEnum []string
	// Nullable lets the property also be JSON null.
	Nullable bool
}

// Num returns a pointer to f, for Prop.Minimum and Prop.Maximum.
func Num(f float64) *float64 { return &f }

// ObjectSchema builds a tool input schema: "type":"object", the properties
// in the order given, "required", and "additionalProperties":false.
func ObjectSchema(required []string, props ...Prop) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(p.Name))
		b.WriteByte(':')
		b.Write(p.json())
	}
	b.WriteString(`}`)
	if len(required) > 0 {
		b.WriteString(`,"required":`)
		b.Write(mustJSON(required))
	}
	b.WriteString(`,"additionalProperties":false}`)
	return json.RawMessage(b.Bytes())
}

func (p Prop) json() []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	if p.Nullable {
		b.Write(mustJSON([]string{p.Type, "null"}))
	} else {
		b.Write(mustJSON(p.Type))
	}
	if p.Description != "" {
		b.WriteString(`,"description":`)
		b.Write(mustJSON(p.Description))
	}
	if len(p.Enum) > 0 {
		b.WriteString(`,"enum":`)
		b.Write(mustJSON(p.Enum))
	}
	if p.Pattern != "" {
		b.WriteString(`,"pattern":`)
		b.Write(mustJSON(p.Pattern))
	}
	if p.MaxLength > 0 {
		b.WriteString(`,"maxLength":`)
		b.Write(mustJSON(p.MaxLength))
	}
	if p.Minimum != nil {
		b.WriteString(`,"minimum":`)
		b.Write(mustJSON(*p.Minimum))
	}
	if p.Maximum != nil {
		b.WriteString(`,"maximum":`)
		b.Write(mustJSON(*p.Maximum))
	}
	if p.Items != "" {
		b.WriteString(`,"items":{"type":`)
		b.Write(mustJSON(p.Items))
		if len(p.ItemsEnum) > 0 {
			b.WriteString(`,"enum":`)
			b.Write(mustJSON(p.ItemsEnum))
		}
		b.WriteString(`}`)
	}
	b.WriteString(`}`)
	return b.Bytes()
}

func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings, ints and string slices reach here
	}
	return out
}
