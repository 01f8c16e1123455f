// Package daemon wires a running agentosd together: the store, the model
// configuration, the engine (which recovers what a previous run left
// unfinished), the ACP agent and the heartbeat, and serves ACP either on
// the desktop socket (Serve, `agentosd serve`) or on stdin/stdout (Stdio,
// `agentosd stdio`).
//
// Runtime names every subsystem; the command in runtime/cmd/agentosd only
// parses flags and signals and calls into this package.
//
// # Data directory
//
//	agentos.db       the store (SQLite, WAL)
//	model.json       the model configuration (package modelconf; never the key)
//	model.key        the model key alone, mode 0600 (else --model-key-file or $AGENTOS_MODEL_KEY)
//	heartbeat        key=value: pid, tasks, at (unix ms), state — read by the supervisor
package daemon
