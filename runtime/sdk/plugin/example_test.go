package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
)

// A tool answers with a result: JSON puts compact JSON in the text the
// model reads and the same object in structuredContent.
func ExampleJSON() {
	r := plugin.JSON(map[string]any{"id": 7, "title": "Dentist <3pm>"})
	fmt.Println(r.Text, r.IsError, r.Structured != nil)
	// Output: {"id":7,"title":"Dentist <3pm>"} false true
}

// A tool error is one sentence that tells the model how to fix its call.
func ExampleError() {
	r := plugin.Error("No alarm with id 7; call alarm_list for the ids.")
	fmt.Println(r.IsError, r.Text)
	// Output: true No alarm with id 7; call alarm_list for the ids.
}

// Registration checks a tool's name and schema and says what is wrong.
func ExampleServer_AddTool() {
	srv := plugin.NewServer(plugin.Info{Name: "memo"}, nil)
	h := func(context.Context, json.RawMessage) (*plugin.Result, error) { return plugin.Text("ok"), nil }
	fmt.Println(srv.AddTool(plugin.Tool{Name: "memo add", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: h}))
	fmt.Println(srv.AddTool(plugin.Tool{Name: "memo_add", InputSchema: json.RawMessage(`{"type":"array"}`), Handler: h}))
	fmt.Println(srv.AddTool(plugin.Tool{Name: "memo_add", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: h}))
	fmt.Println(srv.Tools())
	// Output:
	// add tool "memo add": tool name must be 1-128 characters of A-Z, a-z, 0-9, '_', '.', '-'
	// add tool memo_add: inputSchema must be a JSON object whose "type" is "object"
	// <nil>
	// [memo_add]
}

// Tool values written without the SDK (the sample apps' apptool.Tool
// shape) are registered in one call with the apps' own runner.
func ExampleAddAppTools() {
	type annotations struct {
		Title           string `json:"title,omitempty"`
		ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
		DestructiveHint *bool  `json:"destructiveHint,omitempty"`
		IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
		OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
	}
	type tool struct {
		Name        string
		Title       string
		Description string
		InputSchema json.RawMessage
		Annotations annotations
		Handler     func(context.Context, json.RawMessage) (any, error)
	}
	type result struct {
		Text       string
		Structured any
		IsError    bool
	}
	run := func(ctx context.Context, t tool, args json.RawMessage) result {
		v, err := t.Handler(ctx, args)
		if err != nil {
			return result{Text: err.Error(), IsError: true}
		}
		b, _ := json.Marshal(v)
		return result{Text: string(b), Structured: v}
	}
	tools := []tool{{
		Name: "todo_list", Description: "List to-dos.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, json.RawMessage) (any, error) { return map[string]int{"count": 0}, nil },
	}}
	srv := plugin.NewServer(plugin.Info{Name: "todo"}, nil)
	fmt.Println(plugin.AddAppTools(srv, tools, run), srv.Tools())
	// Output: <nil> [todo_list]
}
