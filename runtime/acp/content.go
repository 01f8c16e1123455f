package acp

import (
	"encoding/json"
	"strings"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
)

// parsePrompt checks a session/prompt content array and flattens it into
// the text the model sees (spec §2.6):
//
//   - text: as is;
//   - resource_link: one line "[resource] <name> <uri>";
//   - resource with text: "[resource <uri>]" and the text on the next line;
//   - a binary resource, image, audio or any other type: unsupported.
//
// Blocks are joined with newlines. The length counted against the limits
// is that of the text blocks and embedded text resources. A prompt with
// no non-blank text is invalid_params "prompt is empty". Texts name the
// index, never the content.
func parsePrompt(raw json.RawMessage) (engine.Prompt, error) {
	if firstByte(raw) != '[' {
		return engine.Prompt{}, errcode.New(errcode.InvalidParams, "prompt must be an array of content blocks")
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return engine.Prompt{}, errcode.New(errcode.InvalidParams, "prompt must be an array of content blocks")
	}
	var (
		parts []string
		n     int
	)
	for i, b := range blocks {
		m, ok := members(b)
		if !ok {
			return engine.Prompt{}, errcode.Newf(errcode.InvalidParams, "prompt[%d] must be a content block object", i)
		}
		typ, ok := stringOf(m["type"])
		if !ok {
			return engine.Prompt{}, errcode.Newf(errcode.InvalidParams, "prompt[%d].type must be a string", i)
		}
		field := func(key string) (string, error) {
			s, ok := stringOf(m[key])
			if !ok {
				return "", errcode.Newf(errcode.InvalidParams, "prompt[%d].%s must be a string", i, key)
			}
			return s, nil
		}
		switch typ {
		case "text":
			text, err := field("text")
			if err != nil {
				return engine.Prompt{}, err
			}
			parts = append(parts, text)
			n += chars.Len(text)
		case "resource_link":
			name, err := field("name")
			if err != nil {
				return engine.Prompt{}, err
			}
			uri, err := field("uri")
			if err != nil {
				return engine.Prompt{}, err
			}
			parts = append(parts, "[resource] "+name+" "+uri)
		case "resource":
			res, ok := members(m["resource"])
			if !ok {
				return engine.Prompt{}, errcode.Newf(errcode.InvalidParams, "prompt[%d].resource must be an object", i)
			}
			uri, ok := stringOf(res["uri"])
			if !ok {
				return engine.Prompt{}, errcode.Newf(errcode.InvalidParams, "prompt[%d].resource.uri must be a string", i)
			}
			if text, ok := stringOf(res["text"]); ok {
				parts = append(parts, "[resource "+uri+"]\n"+text)
				n += chars.Len(text)
				continue
			}
			if _, ok := res["blob"]; ok {
				return engine.Prompt{}, errcode.Newf(errcode.Unsupported, "prompt[%d]: binary resources are not supported", i)
			}
			return engine.Prompt{}, errcode.Newf(errcode.InvalidParams, "prompt[%d].resource needs text", i)
		case "image":
			return engine.Prompt{}, errcode.Newf(errcode.Unsupported, "prompt[%d]: images are not supported", i)
		case "audio":
			return engine.Prompt{}, errcode.Newf(errcode.Unsupported, "prompt[%d]: audio is not supported", i)
		default:
			return engine.Prompt{}, errcode.Newf(errcode.Unsupported, "prompt[%d]: this content type is not supported", i)
		}
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		return engine.Prompt{}, errcode.New(errcode.InvalidParams, "prompt is empty")
	}
	return engine.Prompt{Content: raw, Text: text, Chars: n}, nil
}
