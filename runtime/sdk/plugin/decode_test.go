package plugin

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var decodeCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":"a","method":"ping","params":null}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":null}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"k":1}}}`,
	`{"jsonrpc":"2.0","id":7,"error":null}`,
	`{"jsonrpc":"2.0","id":7,"error":{"CODE":1,"Message":"case"}}`,
	`{"jsonrpc":"2.0","id":7,"error":"text"}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":1.5}}`,
	`{"jsonrpc":"2.0","id":7,"method":null}`,
	`{"jsonrpc":"2.0","id":7,"method":3}`,
	`{"jsonrpc":"2.0","id":null,"result":1}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.7,"method":"x"}`,
	`{"JSONRPC":"2.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","ID":1,"Method":"x"}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"jsonrpc":2,"id":1,"method":"x"}`,
	`{"id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0"}`,
	`[1,2]`,
	`null`,
	`"x"`,
	`{"jsonrpc":"2.0","id":1,"method":"x"} trailing`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"\u00e9\ud800"}`,
}

// sameMessage compares the decoders' results: both fail, or both give
// the same message.
func sameMessage(t *testing.T, line string) {
	t.Helper()
	want, wantErr := jsonrpc.DecodeMessage([]byte(line))
	got, gotErr := decodeMessage([]byte(line))
	if wantErr != nil {
		require.Error(t, gotErr, "the SDK refuses %q", line)
		return
	}
	require.NoError(t, gotErr, "the SDK accepts %q", line)
	switch w := want.(type) {
	case *jsonrpc.Request:
		g, ok := got.(*jsonrpc.Request)
		require.True(t, ok, "%q: %T", line, got)
		assert.Equal(t, w.ID, g.ID)
		assert.Equal(t, w.Method, g.Method)
		assert.Equal(t, string(w.Params), string(g.Params))
	case *jsonrpc.Response:
		g, ok := got.(*jsonrpc.Response)
		require.True(t, ok, "%q: %T", line, got)
		assert.Equal(t, w.ID, g.ID)
		assert.Equal(t, string(w.Result), string(g.Result))
		if w.Error == nil {
			assert.Nil(t, g.Error)
		} else {
			we, ge := w.Error.(*jsonrpc.Error), g.Error.(*jsonrpc.Error)
			assert.Equal(t, we.Code, ge.Code)
			assert.Equal(t, we.Message, ge.Message)
			assert.Equal(t, string(we.Data), string(ge.Data))
		}
	}
}

func TestDecodeMessageMatchesSDK(t *testing.T) {
	for _, line := range decodeCases {
		t.Run("", func(t *testing.T) { sameMessage(t, line) })
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, c := range decodeCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, line string) { sameMessage(t, line) })
}

func BenchmarkDecodeMessage(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"x"}],"isError":false}}`)
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			jsonrpc.DecodeMessage(line)
		}
	})
	b.Run("plugin", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeMessage(line)
		}
	})
}
