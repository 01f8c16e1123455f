package plugin

import (
	"context"
	"encoding/json"
	"fmt"
)

// The shapes below are those of the sample apps' SDK-free tool layer
// (sampleapps/apptool: Tool, Annotations, Result). The runtime imports
// nothing from the sample apps, so AddAppTools matches the shapes at
// compile time instead: any struct types with exactly these fields fit,
// and a change to apptool that breaks the shape breaks the apps' build,
// not their behaviour.

// AppAnnotations is the shape of apptool.Annotations.
type AppAnnotations interface {
	~struct {
		Title           string `json:"title,omitempty"`
		ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
		DestructiveHint *bool  `json:"destructiveHint,omitempty"`
		IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
		OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
	}
}

// AppTool is the shape of apptool.Tool with its annotations type A and
// handler type H.
type AppTool[A AppAnnotations, H any] interface {
	~struct {
		Name        string
		Title       string
		Description string
		InputSchema json.RawMessage
		Annotations A
		Handler     H
	}
}

// AppResult is the shape of apptool.Result.
type AppResult interface {
	~struct {
		Text       string
		Structured any
		IsError    bool
	}
}

// AddAppTools registers SDK-free tool values in one call: the sample
// apps' shells pass their tools and apptool.Run, which runs a tool's
// handler with the apps' error conventions (a user error's sentence, or
// "<tool> failed." without internals):
//
//	err := plugin.AddAppTools(srv, app.Tools(), apptool.Run)
//
// Each tool is checked as AddTool checks it; the first bad one stops the
// registration with its error (tools before it stay registered).
func AddAppTools[T AppTool[A, H], A AppAnnotations, H any, R AppResult](s *Server, tools []T, run func(context.Context, T, json.RawMessage) R) error {
	for _, t := range tools {
		v := struct {
			Name        string
			Title       string
			Description string
			InputSchema json.RawMessage
			Annotations A
			Handler     H
		}(t)
		tool := t
		err := s.AddTool(Tool{
			Name:        v.Name,
			Title:       v.Title,
			Description: v.Description,
			InputSchema: v.InputSchema,
			Annotations: Annotations(v.Annotations),
			Handler: func(ctx context.Context, args json.RawMessage) (*Result, error) {
				r := struct {
					Text       string
					Structured any
					IsError    bool
				}(run(ctx, tool, args))
				return &Result{Text: r.Text, Structured: r.Structured, IsError: r.IsError}, nil
			},
		})
		if err != nil {
			return fmt.Errorf("plugin: register app tools: %w", err)
		}
	}
	return nil
}
