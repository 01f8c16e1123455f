// Package quota holds the caller quotas of spec §4.3: per third-party app
// (caller kind APP, keyed by ownerKey), a prompt-length limit, one prompt
// in progress at a time and a sliding hourly window of admissions.
//
// A Quota is the engine's Admission hook: the engine asks it before a
// prompt is queued and reports the task's end through the returned done
// function, so "in progress" lasts from admission to task end, never to a
// disconnect. The checks run in the order length, concurrency, hourly;
// refused prompts are not counted. Counters live in memory only (a
// restart resets them) and survive revocation; only Forget (uninstall)
// drops them. SELF, DESKTOP and SYSTEM callers are never counted.
package quota
