// Package adbwire encodes and decodes the adb wire protocol as a device
// (adbd) sees it: the 24-byte message frames (CNXN, OPEN, OKAY, WRTE,
// CLSE), the sync sub-protocol carried inside a "sync:" stream, and the
// shell protocol v2 packets carried inside a "shell,v2:" stream.
//
// Decoders never trust a length field: every read is capped by a limit the
// caller chooses, so a broken or hostile peer costs at most that much
// memory.
package adbwire
