package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func httpRequestCap() *Capability {
	return &Capability{ID: "http_request", Description: "Send an HTTP request.", Params: []Param{
		{Name: "url", Type: TypeString, Required: true},
		{Name: "method", Type: TypeString},
		{Name: "headers", Type: TypeString},
		{Name: "tls_verify", Type: TypeBoolean},
		{Name: "limit", Type: TypeInt},
		{Name: "ratio", Type: TypeDouble},
		{Name: "blob", Type: TypeBytes},
		{Name: "tags", Type: TypeStringArray},
		{Name: "legacy_limit", Type: TypeString},
		{Name: "odd", Type: "uuid"},
	}}
}

// ConvertArgs is the model-to-callee conversion: upstream's aci_call
// turned numbers into Integer/Double and the browser read them with
// getString, silently using its defaults (tls_verify:false stayed on).
// Here every argument arrives in the declared type or the call fails.
func TestConvertArgs(t *testing.T) {
	c := httpRequestCap()
	tests := []struct {
		name string
		args string
		want Bundle
		err  string
	}{
		{"declared types pass through", `{"url":"http://x","limit":50,"ratio":0.5,"tls_verify":false}`,
			Bundle{"url": String("http://x"), "limit": Int(50), "ratio": Double(0.5), "tls_verify": Bool(false)}, ""},
		{"a boolean sent as text is a boolean", `{"url":"u","tls_verify":"false"}`,
			Bundle{"url": String("u"), "tls_verify": Bool(false)}, ""},
		{"a number for a string param is its text, not dropped", `{"url":"u","legacy_limit":50}`,
			Bundle{"url": String("u"), "legacy_limit": String("50")}, ""},
		{"a big number keeps every digit", `{"url":"u","legacy_limit":12345678901234567890}`,
			Bundle{"url": String("u"), "legacy_limit": String("12345678901234567890")}, ""},
		{"an object for a string param is its JSON", `{"url":"u","headers":{"A": "b"}}`,
			Bundle{"url": String("u"), "headers": String(`{"A":"b"}`)}, ""},
		{"an integral double is an int", `{"url":"u","limit":50.0}`, Bundle{"url": String("u"), "limit": Int(50)}, ""},
		{"exponent form", `{"url":"u","limit":1e3}`, Bundle{"url": String("u"), "limit": Int(1000)}, ""},
		{"numeric text for an int", `{"url":"u","limit":" 7 "}`, Bundle{"url": String("u"), "limit": Int(7)}, ""},
		{"an int for a double", `{"url":"u","ratio":2}`, Bundle{"url": String("u"), "ratio": Double(2)}, ""},
		{"base64 for bytes", `{"url":"u","blob":"AAH/"}`, Bundle{"url": String("u"), "blob": Bytes([]byte{0, 1, 255})}, ""},
		{"an array for a string_array", `{"url":"u","tags":["a",1,true]}`, Bundle{"url": String("u"), "tags": Strings([]string{"a", "1", "true"})}, ""},
		{"an unknown declared type is text", `{"url":"u","odd":5}`, Bundle{"url": String("u"), "odd": String("5")}, ""},
		{"null is absent", `{"url":"u","limit":null}`, Bundle{"url": String("u")}, ""},
		{"required missing", `{"limit":1}`, nil, "argument url: required"},
		{"required null", `{"url":null}`, nil, "argument url: required"},
		{"undeclared argument", `{"url":"u","confirm":true}`, nil, "argument confirm: http_request has no such parameter"},
		{"fraction for an int", `{"url":"u","limit":1.5}`, nil, "argument limit: 1.5 is not an integer"},
		{"word for an int", `{"url":"u","limit":"many"}`, nil, `argument limit: "many" is not an integer`},
		{"word for a boolean", `{"url":"u","tls_verify":"no"}`, nil, `argument tls_verify: "no" is not true or false`},
		{"number for a boolean", `{"url":"u","tls_verify":0}`, nil, "argument tls_verify: a double cannot be used as a boolean"},
		{"object for an int", `{"url":"u","limit":{}}`, nil, "argument limit: an object or array cannot be used as an int"},
		{"bad base64", `{"url":"u","blob":"!!"}`, nil, "argument blob: bytes must be standard base64"},
		{"nested array in a string_array", `{"url":"u","tags":[["a"]]}`, nil, "argument tags: string_array items must be strings, numbers or booleans"},
		{"repeated argument", `{"url":"u","url":"v"}`, nil, "argument url: given twice"},
		{"not an object", `[1]`, nil, "arguments: must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConvertArgs(c, json.RawMessage(tt.args))
			if tt.err != "" {
				require.Error(t, err)
				var ae *ArgError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.err, err.Error())
				return
			}
			require.NoError(t, err)
			require.Len(t, got, len(tt.want))
			for k, v := range tt.want {
				assert.True(t, v.Equal(got[k]), "%s: got %v (%s), want %v (%s)", k, got[k].Any(), got[k].Type(), v.Any(), v.Type())
			}
		})
	}
	got, err := ConvertArgs(&Capability{ID: "x"}, nil)
	require.NoError(t, err)
	assert.Empty(t, got, "no arguments is an empty bundle")
}

func TestCoerce(t *testing.T) {
	ok := []struct {
		in   Value
		t    Type
		want Value
	}{
		{Int(5), TypeString, String("5")},
		{Double(0.25), TypeString, String("0.25")},
		{Bool(true), TypeString, String("true")},
		{String("TRUE"), TypeBoolean, Bool(true)},
		{String("-3"), TypeInt, Int(-3)},
		{Double(-3), TypeInt, Int(-3)},
		{Int(3), TypeDouble, Double(3)},
		{String("x"), TypeStringArray, Strings([]string{"x"})},
		{String("x"), "mystery", String("x")},
	}
	for _, tt := range ok {
		got, err := Coerce(tt.in, tt.t)
		require.NoError(t, err, "%v → %s", tt.in.Any(), tt.t)
		assert.True(t, tt.want.Equal(got), "%v → %s = %v", tt.in.Any(), tt.t, got.Any())
	}
	bad := []struct {
		in Value
		t  Type
	}{
		{Double(1e300), TypeInt}, {String("NaN"), TypeDouble}, {Bytes(nil), TypeString},
		{Strings(nil), TypeString}, {Int(1), TypeBoolean}, {Bool(true), TypeInt},
	}
	for _, tt := range bad {
		_, err := Coerce(tt.in, tt.t)
		assert.ErrorIs(t, err, ErrValue, "%v → %s", tt.in.Any(), tt.t)
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]Type{"string": TypeString, "INT": TypeInt, "byte[]": TypeBytes, "float": TypeDouble, "boolean": TypeBoolean, "string_array": TypeStringArray} {
		got, ok := ParseType(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	got, ok := ParseType("Uri")
	assert.False(t, ok)
	assert.Equal(t, Type("Uri"), got)
}

// FuzzConvertArgs: conversion never panics, and what it accepts has every
// required param, only declared params, each of its declared type, and
// survives the wire (encode, decode) unchanged.
func FuzzConvertArgs(f *testing.F) {
	for _, s := range []string{`{"url":"u","limit":50}`, `{"url":1e400}`, `{"tags":[1,"a",null]}`, `{"url":"u","ratio":"1e-9"}`, `null`, `{"blob":"AA=="}`, `{"url":{"a":[1,2]}}`} {
		f.Add(s)
	}
	c := httpRequestCap()
	f.Fuzz(func(t *testing.T, args string) {
		b, err := ConvertArgs(c, json.RawMessage(args))
		if err != nil {
			return
		}
		for k, v := range b {
			p, ok := c.Param(k)
			if !ok {
				t.Fatalf("undeclared %q accepted", k)
			}
			want := p.Type
			if !want.Known() {
				want = TypeString
			}
			if v.Type() != want {
				t.Fatalf("%s is %s, declared %s", k, v.Type(), p.Type)
			}
		}
		if _, ok := b["url"]; !ok {
			t.Fatal("required url missing")
		}
		p, err := EncodeRequest(&Request{Capability: "http_request", Params: b})
		if err != nil {
			// Only a double outside JSON's range cannot be sent; ConvertArgs never makes one.
			t.Fatalf("accepted arguments cannot be encoded: %v", err)
		}
		r, err := DecodeRequest(p)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		for k, v := range b {
			if !v.Equal(r.Params[k]) {
				t.Fatalf("%s changed on the wire: %v → %v", k, v.Any(), r.Params[k].Any())
			}
		}
	})
}
