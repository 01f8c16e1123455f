// Package acptestclient is the generic caller app of the lab's
// third-party scenarios (spec §10.3), the counterpart of upstream's test
// client org.agentos.test.acp.client: a caller with no tools of its own
// and one debug command,
//
//	acptestclient run '<op>' ['<op>' …]
//
// Each argument is one JSON operation, a JSON array of them, or
// {"ops":[…]} (a command-line argument holds at most 4,096 bytes; a plan
// may span up to 64 of them). The operations run in order through the
// caller SDK (runtime/sdk/acpclient) against the runtime whose caller
// socket $AGENTOS_CALLER_SOCKET names; raw operations speak lines on the
// sockets for what an SDK never sends. run prints one JSON document,
//
//	{"ok":true,"r":{"<as>":{…, "elapsedMs":N, "error":null|{code, agentosCode, reason, message, …}}},"steps":[{op, as, elapsedMs, error}]}
//
// and exits 0 whatever the runtime answered (refusals are outcomes for
// the scenario's checks to judge); 2 when the plan cannot be read.
//
// # Operations
//
//	connect      {as, maxWaitMs, retryMs, clientName, clientVersion}   SDK Connect: waits while authorization is pending; waits[], capabilities
//	disconnect   {conn}                                                 closes a connection (its tasks keep running)
//	wait_closed  {conn, timeoutMs}                                      closed: the runtime ended the connection in time
//	new, fork    {conn, as, id (fork), scope, mcpServers, cwd}          a session: sessionId, mode(s), model(s), mcpServers, activeTask
//	load, resume {conn, as, id, mcpServers, cwd}                        load also gives history[] and historyText
//	list         {conn, cwd}                                            sessions[{sessionId, cwd, title, updatedAt}]
//	delete       {conn, id}
//	close        {session}
//	set_mode     {session, mode};  set_model {session, model}
//	prompt       {session, text, pad, times, background, cancelAfterMs, dropText} stopReason, taskId, text, toolCalls[{id, tool, status, statuses, result, arguments, ref}],
//	             stream{chunks, chars, maxChunkChars, sha256, firstChunkMs, gapP50Ms, gapP99Ms, chunksPerSec, charsPerSec, cancelToStopMs}
//	cancel       {session};  await {prompt, timeoutMs}
//	wait_text    {prompt, text, timeoutMs}                              seen: a background prompt streamed the text (its task runs)
//	raw_open     {as, readMs}                                           a raw caller channel: opened, reason, requestId, line
//	raw          {conn, send | line, readMs}                            one line sent; response (by id), other[], closed
//	raw_close    {conn}
//	dial         {socket: caller|admin|acp|aci:PKG/SERVER|NAME, line, readMs}
//	                                                                    result: refused, reset, epipe, eof, data or open; closedUnread
//	                                                                    (on aci:PKG/SERVER, a controlled app's ACI socket, the line goes
//	                                                                    as one ACIS frame and the answer is one ACIR frame)
//	sleep        {ms}
//	listen       {socket: app:PKG/SERVER|aci:PKG/SERVER|NAME, ms, readMs}
//	                                                                    listening, accepted, bytesRead: a squatter on a socket for ms
//	                                                                    (ended readMs after its last connection, when set)
//	wait_clock   {conn, ms, since, timeoutMs}                           moved, movedMs, kind: the runtime's clock (clock.show on an admin conn) is ms past since's answer
//
// id and session name a session of the plan (its as) or any session id
// (another app's, for the isolation checks). scope absent means no
// toolScope, [] means no tools. pad fills text with "x" up to that many
// characters (a 16,001-character prompt does not fit an argument).
//
// In raw and dial lines, ${r:<as>.<path>} inserts a value of an earlier
// result (the session id a raw session/new answered), ${pad:N} N times
// "x"; pairing codes and
// tokens in answers are redacted from the output and referred to as
// ${secret:<as>.code|token} (or ${wrong:…}, a same-shaped wrong value).
package acptestclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/agentoslab/agentlab/sampleapps/internal/netprobe"
)

// Identity of the test client.
const (
	Package = "org.agentos.test.acp.client"
	Label   = "ACP Test Client"
	Binary  = "acptestclient"
	// CommandRun is the one debug command.
	CommandRun = "run"
	// EnvCallerSocket names the runtime's caller socket (the launcher
	// sets it).
	EnvCallerSocket = "AGENTOS_CALLER_SOCKET"
)

// Exit codes of Main.
const (
	ExitOK    = 0
	ExitUsage = 2
)

// Main runs the command line (args without the program name) and returns
// the exit code. getenv reads the environment.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) int {
	if len(args) > 0 && args[0] == netprobe.Command {
		// The app declares no network use: what the device lets it do.
		return netprobe.Main(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != CommandRun {
		fmt.Fprintf(stderr, "usage: %s run '<json operation>' …\n", Binary)
		return ExitUsage
	}
	ops, err := ParsePlan(args[1:])
	if err != nil {
		writeJSON(stdout, Output{OK: false, R: map[string]any{}, Steps: []StepOut{}, Error: err.Error()})
		fmt.Fprintf(stderr, "%s: %v\n", Binary, err)
		return ExitUsage
	}
	out := Run(ctx, Env{CallerSocket: getenv(EnvCallerSocket), Logger: log}, ops)
	writeJSON(stdout, out)
	return ExitOK
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
