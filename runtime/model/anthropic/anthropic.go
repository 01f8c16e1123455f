// Package anthropic is the runtime's provider for the Anthropic Messages
// API, built on github.com/anthropics/anthropic-sdk-go.
//
// Answers are always streamed (SSE). Text and thinking deltas are passed
// on as they arrive; a tool_use block is assembled from its input_json
// deltas and passed on whole when the block stops. The key goes in the
// x-api-key header. The SDK's own retries are off and its credential
// chain (ANTHROPIC_* variables, profiles) is never consulted: every
// attempt goes through the runtime's retry policy and failure mapping
// (spec §3.2, §3.5).
package anthropic

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/httpfail"
)

// DefaultBaseURL is used when model.Config.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is sent when a request sets no limit; the Messages API
// requires one.
const DefaultMaxTokens = 8192

// Options tune the provider. The zero value (or nil) works.
type Options struct {
	// Logger gets retries and stream failures (never prompts, tool
	// arguments, results or keys); nil discards.
	Logger *slog.Logger
	// Retry is the retry policy; the zero value is the spec's.
	Retry model.RetryPolicy
	// IdleTimeout bounds the silence inside a streamed answer; zero means
	// 5 min, negative means none.
	IdleTimeout time.Duration
	// TLSConfig is for endpoints behind a private CA; nil uses the
	// system roots.
	TLSConfig *tls.Config
	// Clock times the retry backoff; nil means the real clock.
	Clock clock.Clock
}

// Provider streams Messages answers. It is safe for concurrent use.
type Provider struct {
	svc    sdk.MessageService
	model  string
	logger *slog.Logger
}

var _ model.Provider = (*Provider)(nil)

// New returns a provider for cfg. A missing key or model is
// model_not_configured: no request could be sent.
func New(cfg model.Config, opts *Options) (*Provider, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	st, err := httpfail.NewSetup("anthropic", DefaultBaseURL, cfg, httpfail.SetupOptions{
		Logger: o.Logger, Retry: o.Retry, IdleTimeout: o.IdleTimeout, TLSConfig: o.TLSConfig, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	// The service is built without anthropic.NewClient on purpose: that
	// would walk the SDK's credential chain (environment, profiles).
	svc := sdk.NewMessageService(
		option.WithBaseURL(st.BaseURL),
		option.WithAPIKey(st.Key),
		option.WithHTTPClient(st.Client),
		option.WithMaxRetries(0),
	)
	return &Provider{svc: svc, model: st.Model, logger: st.Logger}, nil
}

// Stream sends req and returns once the response headers have arrived.
// Errors are model errors (*errcode.Error), or ctx's error when ctx ended
// the call.
func (p *Provider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	var raw *http.Response
	sse := p.svc.NewStreaming(ctx, params, option.WithResponseInto(&raw))
	if err := sse.Err(); err != nil {
		return nil, httpfail.SendError(ctx, err)
	}
	return newStream(ctx, sse, raw, p.logger), nil
}

// params converts a runtime request to Messages parameters. Consecutive
// messages of one role are merged into one message, as the API requires
// alternating roles: tool results become tool_result blocks of the user
// message that follows the assistant's tool_use blocks.
func (p *Provider) params(req *model.Request) (sdk.MessageNewParams, error) {
	m := req.Model
	if m == "" {
		m = p.model
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := sdk.MessageNewParams{Model: sdk.Model(m), MaxTokens: maxTokens}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	add := func(role sdk.MessageParamRole, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			return
		}
		params.Messages = append(params.Messages, sdk.MessageParam{Role: role, Content: blocks})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			add(sdk.MessageParamRoleUser, sdk.NewTextBlock(msg.Text))
		case model.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if msg.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Text))
			}
			for _, c := range msg.ToolCalls {
				args := c.Arguments
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, args, c.Name))
			}
			add(sdk.MessageParamRoleAssistant, blocks...)
		case model.RoleTool:
			add(sdk.MessageParamRoleUser, sdk.NewToolResultBlock(msg.ToolCallID, msg.Text, msg.IsError))
		default:
			return params, errcode.Newf(errcode.Internal, "model request has a message with role %q", msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return params, errcode.Wrap(errcode.Internal, "a tool's input schema is not a JSON object", err)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	return params, nil
}

// inputSchema splits a JSON Schema object into the SDK's typed fields and
// the rest, which is sent unchanged.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(raw) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, err
	}
	if m == nil {
		return s, errors.New("schema is null")
	}
	s.Properties = m["properties"]
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}
