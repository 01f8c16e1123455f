package acpclient_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
)

// A quota refusal of the runtime becomes a typed error.
func ExampleFromRPC() {
	err := acpclient.FromRPC(-32048, "quota_exceeded: This app has used its 30 prompts for the hour.",
		[]byte(`{"agentosCode":"quota_exceeded","retryable":true,"details":{"reason":"hourly","limit":30,"retryAfterSeconds":600}}`))
	var e *acpclient.Error
	if errors.Is(err, acpclient.ErrRateLimited) && errors.As(err, &e) {
		fmt.Println(e.Code, e.RetryAfterSeconds)
	}
	// Output: RATE_LIMITED 600
}

// The first line of the caller channel tells an open channel from a
// refusal without a timeout.
func ExampleParseOpenLine() {
	err := acpclient.ParseOpenLine([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,` +
		`"message":"agentos.acp.denied: the user denied this app access to AgentOS; try again later",` +
		`"data":{"agentosCode":"not_open","retryable":false,"reason":"denied"}}}`))
	fmt.Println(errors.Is(err, acpclient.ErrDenied))
	// Output: true
}

// Connect, open a session limited to one tool, and stream a prompt.
func ExampleConnect() {
	ctx := context.Background()
	conn, err := acpclient.Connect(ctx, &acpclient.Options{
		OnWaiting: func(requestID string, waited time.Duration) {
			fmt.Printf("waiting for the owner (%s)\n", waited.Round(time.Second))
		},
	})
	switch {
	case errors.Is(err, acpclient.ErrNotInstalled):
		fmt.Println("AgentOS is not running")
		return
	case errors.Is(err, acpclient.ErrDenied):
		fmt.Println("the owner said no; try again later")
		return
	case err != nil:
		fmt.Println(err)
		return
	}
	defer conn.Close()
	s, err := conn.NewSession(ctx, acpclient.SessionOptions{
		ToolScope: []acpclient.ToolRef{{Plugin: "notes", Tool: "note_create"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range s.Prompt(ctx, "Save a note: buy milk", acpclient.PromptOptions{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev := ev.(type) {
		case acpclient.Text:
			fmt.Print(ev.Text)
		case acpclient.ToolCall:
			fmt.Println("tool", ev.Tool, ev.Status)
		case acpclient.Done:
			fmt.Println("\ndone:", ev.StopReason)
		}
	}
}
