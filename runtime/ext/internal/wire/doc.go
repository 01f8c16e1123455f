// Package wire is the private protocol between `agentosd serve` and the
// extension host (`agentosd ext`) on transport.Names.Ext(): its methods,
// notifications and their payloads. The messages travel on the runtime's
// one JSON-RPC peer (runtime/internal/rpc), in both directions, with
// per-call cancellation and errors in the runtime's one wire shape.
//
// Both ends check the other's uid with SO_PEERCRED before a byte is
// read (serve also checks that the peer is the process it started).
package wire

// MaxLineChars bounds one message on the link: a whole catalog push fits
// (4,096 tools with their schemas), anything larger is a broken peer.
const MaxLineChars = 16 << 20
