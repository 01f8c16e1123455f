// Package netd is a virtual device's stand-in for Android netd's DNS
// proxy: a unix socket that speaks netd's dnsproxyd protocol
// (DnsProxyListener: getaddrinfo and gethostbyname, the commands bionic
// sends) and answers from a table the lab controls, then from the host's
// resolver. The device sees it as /dev/socket/dnsproxyd (mode 0660, group
// inet 3003, as netd.rc creates it); the device's network namespace has
// only loopback and no /etc/resolv.conf, so this socket is the only DNS a
// process inside can reach — as on a phone.
//
// The server runs in the process that owns the device, on the host side
// of the namespaces: its lookups use the host's network, and its socket
// file, kept in the device's host folder, is bind-mounted into each boot's
// /dev.
//
// The table is a hosts-format file (address, then names) read at every
// query, so a running device's table can be changed by rewriting it.
// Names in the table are answered from it alone (like /system/etc/hosts
// in netd's resolver); names under the special-use TLDs .test, .example,
// .invalid and .localhost that it lacks do not exist; other names go to
// the host.
package netd
