// Package labclock is the runtime's clock as the lab sees it: virtual
// time the owner can advance, in builds with the agentos_labclock build
// tag; the real clock, and nothing else, in every other build.
//
// # Why
//
// Many of the product's rules are durations: a pairing code lives 5
// minutes, a consent card 60 seconds, a denied caller waits 10 minutes,
// quotas count a sliding hour, an idle provider is released after 30
// seconds. A scenario that checks such a rule on a virtual device asks
// the runtime to advance its clock instead of waiting:
//
//	agentosd ctl clock advance 5m
//	agentosd ctl clock show
//
// On a phone or an emulator with a release build the same verbs answer
// unsupported ("this build has the real clock only"), and clock show
// says "real", so the lab knows it has to wait for real.
//
// # Virtual time
//
// A virtual clock reads the real clock plus an offset that only grows:
// time flows at the real rate, and advance adds to the offset. Every
// timer waiting on the clock (runtime/clock) is due at a time on it;
// when the offset grows, each timer that became due fires at once, in
// the order they were due, and the others are re-armed for what is left.
// Readings keep their monotonic part, so durations between two readings
// are exact.
//
// # One offset for every process
//
// serve owns the offset: Open reads it from the file FileName ("clock")
// in the runtime's data directory, and Owner.Advance writes the new
// offset there (to a temporary file renamed over it, so a reader never
// sees half of it) before moving its own clock. The processes whose
// timers matter follow that file with Follow, re-reading it every
// FollowInterval: the extension host (`agentosd ext`: provider idle
// release, call timeouts) and the supervisor (`agentosd supervise`:
// restart backoff, the crash-loop window), which reads it in
// <root>/runtime as root.
//
// A file, rather than a message on each process's link, because it
// needs no change to any protocol, it reaches processes that serve does
// not talk to (the supervisor is serve's parent), it survives restarts
// of every process including serve (virtual time never goes back, so
// timestamps already stored stay in the past), and a follower that
// misses a change catches up at its next read. The cost, a followed
// advance lands up to FollowInterval later than serve's own, only
// matters for timers of the followers, which are all seconds or more.
//
// While serve is down (the supervisor's restart backoff after a crash)
// nobody can advance the clock; backoffs are at most 60 s and run in
// real time then.
//
// The sample apps keep the device's wall clock: their times are the
// user's dates (an alarm, a calendar day), none of their timers is a
// rule the lab waits out, and a phone's apps would not follow the
// runtime's clock either.
//
// # Release builds
//
// Without the tag, Open and Follow return the real clock, no file is
// read or written, no goroutine runs, and Advance returns ErrRealClock.
// Enabled is a constant, so code guarded by it is compiled away.
package labclock
