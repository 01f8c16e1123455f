package plugin

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxDepth is the MCP SDK's nesting limit for a message.
const maxDepth = 1000

var (
	errMaxDepth   = fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)
	errNoResponse = errors.New("jsonrpc: a message without method or id")
)

// decodeMessage is jsonrpc.DecodeMessage's contract (same keys matched
// exactly, same version check, same ids, same nesting limit) on
// encoding/json. The SDK's decoder allocates a 32 KiB buffer for every
// value it decodes, twice for a request; on the tool-call path that was
// most of the garbage of the extension host and of every provider. Lines
// that are not a single JSON object go to the SDK's decoder.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		// Not one JSON object: the SDK's reader is more lenient (it
		// reads the first value of the line), so it decides.
		return jsonrpc.DecodeMessage(data)
	}
	if keys == nil {
		return nil, errors.New("unmarshaling jsonrpc message: not an object")
	}
	var version string
	if raw, ok := keys["jsonrpc"]; ok {
		if err := json.Unmarshal(raw, &version); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	if version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q", version)
	}
	var rawID any
	if raw, ok := keys["id"]; ok {
		if err := json.Unmarshal(raw, &rawID); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if raw, ok := keys["method"]; ok {
		var method string
		if err := json.Unmarshal(raw, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: keys["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errNoResponse
	}
	resp := &jsonrpc.Response{ID: id, Result: keys["result"]}
	if raw, ok := keys["error"]; ok {
		we, err := decodeWireError(raw)
		if err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		if we != nil {
			resp.Error = we
		}
	}
	return resp, nil
}

// decodeWireError reads an error object with its keys matched exactly;
// null is no error.
func decodeWireError(raw json.RawMessage) (*jsonrpc.Error, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, err
	}
	if keys == nil {
		return nil, nil
	}
	we := &jsonrpc.Error{Data: keys["data"]}
	if v, ok := keys["code"]; ok {
		if err := json.Unmarshal(v, &we.Code); err != nil {
			return nil, err
		}
	}
	if v, ok := keys["message"]; ok {
		if err := json.Unmarshal(v, &we.Message); err != nil {
			return nil, err
		}
	}
	return we, nil
}

// checkDepth refuses values nested deeper than maxDepth.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errMaxDepth
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
