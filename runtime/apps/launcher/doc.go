// Package launcher starts installed apps' processes under their own uid
// on the runtime's behalf, like Android's bindService, and performs
// installs and uninstalls. Its Server runs inside `agentosd supervise`
// (root); the runtime and the extension host use its Client over a
// private socket that admits only the runtime's uid.
//
// # The app's side of the contract
//
// For each service of app.json the launcher runs, on demand,
//
//	<codeDir>/bin/<abi>/<binary> serve --server <server>
//
// as the app's uid and gid, with the inet group (3003) as its only
// supplementary group when app.json declares "permissions": ["network"]
// (or a package sharing its uid does) and none otherwise, in its own process
// group, with stdin from /dev/null, stdout and stderr appended to
// <dataDir>/agentos-<server>.log (rotated at 1 MiB, one old copy kept),
// working directory <dataDir>, and only this environment:
//
//	AGENTOS_APP_DATA  the app's data directory (owned by its uid, mode 0700)
//	AGENTOS_PACKAGE   the package name
//	AGENTOS_SOCKET    the socket to listen on: transport.Names.App(package, server)
//	                  with the runtime's prefix ("@agentos-app.<package>.<server>")
//	                  for an MCP server, transport.Names.ACI(package, server)
//	                  ("@aci.<package>.<server>") for an ACI service
//	AGENTOS_RUNTIME_UID  the runtime's uid: the only peer besides itself the
//	                  app's server admits (runtime/sdk/plugin does so)
//	AGENTOS_SYSTEM_DATA  a directory shared by every app uid for the
//	                     simulated system services (alarm clock, calendar)
//	AGENTOS_CALLER_SOCKET  the runtime's caller socket: transport.Names.Caller()
//	                  with the runtime's prefix ("@agentos-caller"), which a
//	                  caller app's SDK dials (runtime/sdk/acpclient)
//	HOME              the data directory
//	PATH              /system/bin:/system/xbin:/vendor/bin:/usr/local/bin:/usr/bin:/bin
//	TZ, ANDROID_*     passed through from the supervisor when set
//
// Start returns once a connection to AGENTOS_SOCKET succeeds and the
// listener's uid (SO_PEERCRED) is the app's. That probe connection is
// closed at once without a byte; a server must tolerate it. A process
// that exits first, or does not listen within the start timeout (10 s),
// fails the start with the reason; a socket held by another uid fails it
// as socket_taken. Stop sends SIGTERM to the process group and SIGKILL
// after a grace period (5 s). Processes die with the supervisor.
//
// One-shot debug commands (`agentosd ctl app run <pkg> -- <cmd> args…`)
// run the same binary with the same user, directory and environment
// (and groups) except AGENTOS_SOCKET, only when <cmd> is listed in app.json
// "commands"; stdout and stderr are captured up to 1 MiB each (the rest
// is counted and dropped) and the process group is killed at the timeout
// (60 s by default, at most 10 min).
//
// # Protocol
//
// JSON lines, like the admin API: {"id":1,"method":"start","params":{…}}
// answered by {"id":1,"result":…} or {"id":1,"error":<errcode wire error>}.
// Methods: start, stop, list, run, install, uninstall, watch. After
// watch's result the connection carries {"event":{…}} lines (process
// started and exited) until either side closes it. Peers other than the
// runtime's uid are closed without a byte.
package launcher
