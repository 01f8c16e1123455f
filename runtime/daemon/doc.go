// Package daemon is the runtime's composition root: System names every
// subsystem of a running agentosd, Open builds them in dependency order
// from one Options value, and Close closes them in reverse. Serve
// (`agentosd serve`) and Stdio (`agentosd stdio`) are the two ways to run
// one; the command in runtime/cmd/agentosd only parses flags and signals
// and calls into this package.
//
// Nothing registers itself: each feature exports its admin methods as a
// value bound to its backend (modelconf.AdminMethods, callerchan,
// bridge, broker, appadmin) and System.adminMethods hands them to the
// admin server; CtlVerbs is the matching table of `agentosd ctl`. A
// feature the runtime runs without (no supervisor, a test build without
// the extension host) keeps its methods in the table, answering
// invalid_state with the reason.
//
// # Build order
//
//	heartbeat   <data>/heartbeat: starting, then recovering
//	Store       <data>/agentos.db
//	Models      <data>/model.json + the key (the one place it is read)
//	Quota       the caller quotas: the engine's Admission        (serve)
//	Sessions    caller-supplied MCP servers                      (serve, with the extension host)
//	Apps        the package table and the Launcher client        (serve, under a supervisor)
//	ACI         the ACI controller: apps' capabilities as tools (serve, under a supervisor, with the extension host)
//	Broker      the extension host's side: starts `agentosd ext` (serve, with the extension host)
//	Engine      sessions, tasks, the turn loop; recovers unfinished tasks
//	Agent       ACP over the engine
//	Callers     the caller authorization registry, <data>/acp    (serve)
//	Caller      @agentos-caller                                  (serve)
//	Bridge      @agentos-acp with desktop pairing                (serve)
//	Admin       @agentos-admin                                   (serve)
//	ACP         @agentos-acp uid-gated instead of Bridge         (serve --allow-own-uid; last, so that
//	            once it accepts every other door answers)
//
// Stdio builds the core only (heartbeat, Store, Models, Engine, Agent);
// the doors for others are nil.
//
// # Data directory
//
//	agentos.db       the store (SQLite, WAL)
//	model.json       the model configuration (package modelconf; never the key)
//	model.key        the model key alone, mode 0600 (else --model-key-file or $AGENTOS_MODEL_KEY)
//	heartbeat        key=value: pid, tasks, at (unix ms), state — read by the supervisor
//	acp/callers.json the caller authorization registry
//	desktop/pairing.json  desktop access and its pairings
package daemon
