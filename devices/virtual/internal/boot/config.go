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
}
