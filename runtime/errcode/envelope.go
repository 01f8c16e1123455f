package errcode

import (
	"bytes"
	"encoding/json"
	"io"
)

// Protocol is the wire error of a failure of the JSON-RPC layer itself
// (RPCParseError, RPCInvalidRequest, RPCMethodNotFound): passed through
// unchanged by spec §3, so it carries no agentos data.
func Protocol(code int, message string) WireError { return WireError{Code: code, Message: message} }

// envelope is a JSON-RPC 2.0 error response.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   WireError       `json:"error"`
}

// ErrorLine is the one JSON-RPC error response the runtime writes outside
// a JSON-RPC engine — a refusal before a protocol starts (busy, a
// pairing failure, a channel refusal), a malformed line answered by the
// framing guard: {"jsonrpc":"2.0","id":<id>,"error":<w>} and a newline.
// id is the request's id as received; nil (or empty) is null.
func ErrorLine(id json.RawMessage, w WireError) []byte {
	if len(bytes.TrimSpace(id)) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(envelope{JSONRPC: "2.0", ID: id, Error: w})
	if err != nil {
		// Only an id that is not JSON gets here: answer with null.
		b, _ = json.Marshal(envelope{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: w})
	}
	return append(b, '\n')
}

// WriteError writes ErrorLine(id, w) to out in one Write.
func WriteError(out io.Writer, id json.RawMessage, w WireError) error {
	_, err := out.Write(ErrorLine(id, w))
	return err
}
