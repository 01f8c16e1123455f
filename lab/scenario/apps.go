package scenario

import (
	"regexp"
	"slices"
	"strings"
)

// Apps are the sample apps scenarios name by their short name, with
// their packages (a test keeps the table in step with sampleapps).
var Apps = map[string]string{
	"acitest":       "org.agentos.test.aci",
	"acptestclient": "org.agentos.test.acp.client",
	"alarm":         "org.agentos.sample.alarm",
	"browser":       "org.agentos.sample.browser",
	"calendar":      "org.agentos.sample.calendar",
	"mcptest":       "org.agentos.test.mcp.plugin",
	"notes":         "org.agentos.sample.notes",
	"sms":           "org.agentos.sample.sms",
	"todo":          "org.agentos.sample.todo",
}

var packageRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*(\.[a-zA-Z][a-zA-Z0-9_]*)+$`)

// PackageOf returns the package of an app given by short name or
// package, and whether the name is acceptable.
func PackageOf(app string) (string, bool) {
	if p, ok := Apps[app]; ok {
		return p, true
	}
	if packageRE.MatchString(app) {
		return app, true
	}
	return "", false
}

// AppName returns the short name of a package when it is a known sample
// app, else the package.
func AppName(pkg string) string {
	for name, p := range Apps {
		if p == pkg {
			return name
		}
	}
	return pkg
}

// appNames lists the known short names.
func appNames() string {
	names := make([]string, 0, len(Apps))
	for n := range Apps {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Device kinds for needs.kinds.
const (
	KindVirtual  = "virtual"
	KindEmulator = "emulator"
	KindPhone    = "phone"
)

// DeviceKinds lists the kinds needs.kinds accepts.
var DeviceKinds = []string{KindVirtual, KindEmulator, KindPhone}
