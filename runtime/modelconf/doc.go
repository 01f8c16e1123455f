// Package modelconf is the runtime's model configuration on disk and its
// owner commands: <data>/model.json (provider, base URL, model, choices,
// script — never the key) and <data>/model.key (the key alone, mode
// 0600). It is the one place that names these files.
//
// A Store is the engine's ModelSource: the engine asks it once per task,
// so `agentosd ctl model set` applies from the next task on. It is also
// an engine.ModelLeaser: `model clear` (or a set that removes the key)
// stops the turns running on the configuration at once, with
// model_not_configured and details.reason "key_revoked". The key is
// read only from stdin by ctl (--key-stdin), travels in the admin call's
// params, and is never logged, printed or returned; `model show` reports
// only keySet.
package modelconf
