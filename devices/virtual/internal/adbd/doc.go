// Package adbd is the adb daemon of a virtual device: it speaks the device
// side of the adb wire protocol on connections a real adb server makes
// (adb connect), and serves the device services — shell v1 and v2, sync,
// socket streams, reverse forwards, root/unroot and reboot.
//
// Data the host sends on a stream is copied once, from the socket: WRTE
// payloads are read into pooled buffers and queued per stream (a bounded
// queue), a WRTE is acknowledged as soon as its header is in if the queue
// has room for the next one, and the sync service writes pushed files
// straight from the payloads.
//
// It runs inside the device's init, in the device's namespaces; every
// process it starts goes through the init's proc.Reaper.
package adbd
