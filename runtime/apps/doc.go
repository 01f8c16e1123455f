// Package apps is AgentOS's package manager for app bundles: the signed
// .agentapp format (Pack, Verify), signing keys, app.json, the package
// table the runtime reads (Table: ByUID, ByName, All, a change feed) and
// the root-only installer that verifies bundles, allocates stable uids,
// unpacks code and data directories and records packages atomically.
//
// # Bundle format
//
// A bundle is a zip holding app.json, one binary per ABI at
// bin/<abi>/<binary> (abi ∈ x86_64, arm64-v8a), the app's Agent Plugin
// under assets/agent-plugin/ and two signature files:
//
//	META-INF/MANIFEST.json  {"format":1,"files":[{"name","size","sha256"},…]}  every other file, sorted
//	META-INF/SIGNATURE      {"format":1,"algorithm":"ed25519","publicKey":b64,"signature":b64}
//
// The signature is ed25519 over the exact bytes of MANIFEST.json. The
// signer's identity, the signing digest, is the SHA-256 of its public key
// in 64 lowercase hex characters.
//
// Bundles are canonical: entries sorted by name, stored (not
// compressed — like an APK's native libraries), fixed timestamp, fixed
// header fields, mode 0755 for binaries and 0644 for everything else, no
// extra fields or comments. Pack writes exactly that, so the same files
// and key give the same bytes, and Verify accepts exactly that, so any
// change to any byte of a signed bundle is rejected: content bytes by
// their signed digests, header bytes by comparison with the canonical
// form, the signature file by its canonical encoding.
package apps
