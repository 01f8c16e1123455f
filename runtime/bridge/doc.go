// Package bridge is desktop access (spec §8): the pairing handshake and
// admission on the desktop ACP socket (transport.Names.ACP,
// "@agentos-acp"), the one-time pairing code, the tokens of paired
// computers and their storage.
//
// Desktop access is off by default; while it is off the socket does not
// exist. Only peer uids 0 (root) and 2000 (shell, i.e. adbd) may connect;
// any other uid is closed without a byte being read. At most 8
// established and 4 handshaking connections are served; more get the
// busy line (id null) and are closed. The first line, within 10 s and at
// most 4,096 characters, must be a _org.agentos/pair request carrying a
// code or a token; nothing else is parsed before it succeeds. On success
// the same connection carries ACP as caller DESKTOP (ownerKey "desktop").
//
// Codes are 6 random digits, valid 5 minutes (on the runtime's clock,
// runtime/clock: monotonic, and advanced by the lab's build), one-time,
// void after 5 wrong tries; only one is active and it lives in memory
// only. Tokens are 32 random bytes in base64url without padding; only
// their SHA-256 is stored, in <data>/desktop/pairing.json, with at most 16
// pairings (the least recently seen is dropped). Switching access off
// drops every pairing and connection; revoking one pairing disconnects
// its connections.
package bridge
