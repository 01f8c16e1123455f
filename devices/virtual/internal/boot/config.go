package boot

// Files and environment shared by the host side and the init.
const (
	// EnvInit marks a process started as a device init; its value is
	// the host path of the device's config file.
	EnvInit = "AGENTLAB_VDEVICE_INIT"
	// ConfigFile is the config's name in the device's host folder.
	ConfigFile = "device.json"
	// ToolPath is where the multi-call binary is inside a device; the
	// host keeps it at <HostRoot>/system/bin/vdevtool, a copy (or hard
	// link) of the binary that started the device, made at every start.
	ToolPath = "/system/bin/vdevtool"
	// ListenerFD is the inherited adb listener; ReadyFD the pipe on which
	// init reports "ready" or "error: …" once.
	ListenerFD = 3
	ReadyFD    = 4
	// ExitReboot is init's exit status when the device should boot again.
	ExitReboot = 3
)

// Config is what the host tells a device's init, as JSON in ConfigFile.
type Config struct {
	Name string `json:"name"`
	// HostRoot is the device's folder on the host (data/, system/, sdcard/).
	HostRoot   string            `json:"host_root"`
	RootMethod string            `json:"root_method"`
	SDK        int               `json:"sdk"`
	ABI        string            `json:"abi"`
	Props      map[string]string `json:"props"`
	Debug      bool              `json:"debug,omitempty"`
	// Netd is the host path of the device's dnsproxyd socket (served by
	// the process that owns the device), bound at /dev/socket/dnsproxyd.
	Netd string `json:"netd,omitempty"`
	// Hide are host folders under the bound system folders that the
	// device must not see (the host's zoneinfo): each gets an empty
	// read-only tmpfs.
	Hide []string `json:"hide,omitempty"`
}

// Android paths a device holds.
const (
	// DnsproxydPath is netd's DNS proxy socket.
	DnsproxydPath = "/dev/socket/dnsproxyd"
	// APEXDir holds the device's APEX folders (the tzdata module), kept in
	// the device's host folder as apex/ and bound read-only.
	APEXDir = "/apex"
	// ParanoidNetworkProp says whether the device enforces Android's
	// inet group on AF_INET/AF_INET6 sockets ("1") or could not ("0").
	ParanoidNetworkProp = "ro.vdevice.paranoid_network"
)
