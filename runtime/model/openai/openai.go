// Package openai is the runtime's provider for OpenAI-compatible Chat
// Completions endpoints (OpenAI itself, the lab's model stub and the many
// vendors that speak the same API), built on github.com/openai/openai-go.
//
// Answers are always streamed. Text and reasoning deltas
// ("reasoning_content", or "reasoning" on some servers) are passed on as
// they arrive; tool calls are assembled from their index-keyed fragments
// and passed on whole when the choice finishes. The SDK's own retries are
// off and environment variables are never read: every attempt goes
// through the runtime's retry policy and failure mapping (spec §3.2,
// §3.5).
package openai

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/httpfail"
)

// DefaultBaseURL is used when model.Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

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
	// MaxCompletionTokens sends Request.MaxTokens as
	// "max_completion_tokens" (OpenAI's reasoning models require it)
	// instead of "max_tokens" (what most compatible servers know).
	MaxCompletionTokens bool
	// TLSConfig is for endpoints behind a private CA; nil uses the
	// system roots.
	TLSConfig *tls.Config
	// Clock times the retry backoff; nil means the real clock.
	Clock clock.Clock
}

// Provider streams Chat Completions. It is safe for concurrent use.
type Provider struct {
	svc    oai.ChatCompletionService
	model  string
	opts   Options
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
	st, err := httpfail.NewSetup("openai", DefaultBaseURL, cfg, httpfail.SetupOptions{
		Logger: o.Logger, Retry: o.Retry, IdleTimeout: o.IdleTimeout, TLSConfig: o.TLSConfig, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	// The service is built without openai.NewClient on purpose: that
	// would read OPENAI_* variables from the environment.
	svc := oai.NewChatCompletionService(
		option.WithBaseURL(st.BaseURL),
		option.WithAPIKey(st.Key),
		option.WithHTTPClient(st.Client),
		option.WithMaxRetries(0),
	)
	return &Provider{svc: svc, model: st.Model, opts: o, logger: st.Logger}, nil
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

// params converts a runtime request to Chat Completions parameters.
func (p *Provider) params(req *model.Request) (oai.ChatCompletionNewParams, error) {
	m := req.Model
	if m == "" {
		m = p.model
	}
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(m)}
	if req.System != "" {
		params.Messages = append(params.Messages, oai.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			params.Messages = append(params.Messages, oai.UserMessage(msg.Text))
		case model.RoleAssistant:
			var a oai.ChatCompletionAssistantMessageParam
			if msg.Text != "" {
				a.Content.OfString = oai.String(msg.Text)
			}
			for _, c := range msg.ToolCalls {
				args := string(c.Arguments)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case model.RoleTool:
			params.Messages = append(params.Messages, oai.ToolMessage(msg.Text, msg.ToolCallID))
		default:
			return params, errcode.Newf(errcode.Internal, "model request has a message with role %q", msg.Role)
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = oai.String(t.Description)
		}
		schema, err := schemaMap(t.InputSchema)
		if err != nil {
			return params, errcode.Wrap(errcode.Internal, "a tool's input schema is not a JSON object", err)
		}
		fn.Parameters = schema
		params.Tools = append(params.Tools, oai.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens > 0 {
		if p.opts.MaxCompletionTokens {
			params.MaxCompletionTokens = oai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = oai.Int(int64(req.MaxTokens))
		}
	}
	return params, nil
}

// schemaMap decodes a tool's JSON Schema; an empty schema is an object
// without properties, which every endpoint accepts.
func schemaMap(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(raw) == 0 {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("schema is null")
	}
	return m, nil
}
