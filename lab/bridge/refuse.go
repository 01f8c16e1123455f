package bridge

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// RefuseWait bounds how long a bridge that cannot connect waits for the
// editor's first request, to answer it with what to do.
const RefuseWait = 5 * time.Second

// refusal is the JSON-RPC error an editor is answered with when the
// bridge cannot reach the phone: the message is the reason and the hint,
// so the editor shows what to do instead of "the agent closed".
func refusal(err error) errcode.WireError {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: ExitFailure, Msg: err.Error()}
	}
	code := errcode.Internal
	switch {
	case e.Code == ExitAuth:
		code = errcode.AuthRequired
	case e.Code == ExitDevice || e.Code == ExitNotListening:
		code = errcode.InvalidState
	case e.Code == ExitUsage:
		code = errcode.InvalidParams
	case e.Reason == ReasonBusy:
		code = errcode.Busy
	}
	text := "agentlab bridge: " + e.Error()
	if e.Hint != "" {
		text += ". What to do: " + e.Hint
	}
	w := errcode.New(code, text)
	w.Details = map[string]any{"exitCode": e.Code}
	if e.Reason != "" {
		w.Details["reason"] = e.Reason
	}
	if e.Hint != "" {
		w.Details["hint"] = e.Hint
	}
	return w.Wire()
}

// answerRefusal waits up to o.RefuseWait for the editor's first request
// on stdin and answers it with refusal(err). Notifications before it
// are skipped; stdin that ends, or a terminal (a person, not an editor),
// gets nothing.
func (o *Options) answerRefusal(err error) {
	if f, ok := o.Stdin.(*os.File); ok {
		if fi, serr := f.Stat(); serr == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return
		}
	}
	ids := make(chan json.RawMessage, 1)
	go func() {
		// Ends at the first request, at the end of stdin, or when Run
		// closes stdin on return.
		defer close(ids)
		br := bufio.NewReaderSize(o.Stdin, maxLineBytes)
		for {
			line, rerr := br.ReadSlice('\n')
			if id := requestID(line); id != nil {
				ids <- id
				return
			}
			if errors.Is(rerr, bufio.ErrBufferFull) {
				continue
			}
			if rerr != nil {
				return
			}
		}
	}()
	t := time.NewTimer(o.RefuseWait)
	defer t.Stop()
	select {
	case id, ok := <-ids:
		if !ok {
			return
		}
		b, merr := json.Marshal(struct {
			JSONRPC string            `json:"jsonrpc"`
			ID      json.RawMessage   `json:"id"`
			Error   errcode.WireError `json:"error"`
		}{"2.0", id, refusal(err)})
		if merr == nil {
			o.Stdout.Write(append(b, '\n'))
		}
	case <-t.C:
	}
}

// requestID is the id of a JSON-RPC request line, nil for anything else
// (notifications, answers, garbage).
func requestID(line []byte) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	id, method := m["id"], m["method"]
	if len(id) == 0 || string(id) == "null" || len(method) == 0 {
		return nil
	}
	return id
}
