package pool_test

import (
	"fmt"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
)

// A selector for a rooted arm64 phone of API 30 or later at one site,
// with the runtime module installed and active.
func ExampleSelector() {
	sel := pool.Selector{
		ABI:    "arm64-v8a",
		MinAPI: 30,
		Root:   []devices.RootMethod{devices.RootMagisk, devices.RootKernelSU},
		Labels: map[string]string{"site": "lab-a"},
		Module: "agentos",
	}
	fmt.Println(sel)
	fmt.Println(sel.Matches(devices.Info{ABI: "arm64-v8a", APILevel: 34, Root: devices.RootMagisk}, map[string]string{"site": "lab-a"}))
	fmt.Println(sel.Matches(devices.Info{ABI: "x86_64", APILevel: 34, Root: devices.RootADB}, map[string]string{"site": "lab-a"}))
	// Output:
	// abi=arm64-v8a, api>=30, root in magisk,kernelsu, site=lab-a, module agentos
	// true
	// false
}
